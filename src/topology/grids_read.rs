//! Reading `[[grid]]` and `[[grid.cluster]]`: names, hosts (within the host limits) and each
//! cluster's LRMS settings.

use super::*;

pub(super) struct ReadCx<'a> {
    pub(super) diags: &'a Diags,
    pub(super) base_dir: Option<&'a Path>,
    pub(super) profiles: Vec<(String, Option<LrmsProfile>)>,
    pub(super) profile_sources: &'a mut Vec<(String, String, String)>,
    /// Hosts read so far, in every cluster.
    pub(super) hosts: u64,
    /// The policies names are looked up in.
    pub(super) registry: &'a Registry,
}

impl ReadCx<'_> {
    pub(super) fn profile(&mut self, name: &str, at: &Loc) -> Option<LrmsProfile> {
        if let Some((_, p)) = self.profiles.iter().find(|(n, _)| n == name) {
            return p.clone();
        }
        let (p, source) = profile::load_with_source(name, at, self.base_dir, self.diags);
        self.profile_sources.extend(source);
        self.profiles.push((name.to_string(), p.clone()));
        p
    }
}

/// A cluster's hosts; `total` counts the topology's hosts so far, checked against
/// [`MAX_TOPOLOGY_HOSTS`] before any is allocated.
pub(super) fn read_hosts(t: &Table<'_>, what: &str, total: &mut u64) -> Vec<HostSpec> {
    let Some(node) = t.get("hosts") else {
        t.missing(
            "hosts",
            "e.g. hosts = { count = 4, cores = 4, memory_mb = 8192, mips = 2000 }",
        );
        return Vec::new();
    };
    let groups: Vec<&Node> = match &node.kind {
        node::NodeKind::Array(items) => items.iter().collect(),
        _ => vec![node],
    };
    if groups.is_empty() {
        t.diags.error(
            &node.loc,
            format!("`hosts` of {what} is empty: the cluster has no host"),
            Some(
                "list at least one group, e.g. hosts = [{ count = 4, cores = 4, memory_mb = 8192 }]"
                    .into(),
            ),
        );
    }
    let mut hosts = Vec::new();
    let mut in_cluster = 0u64;
    for (i, g) in groups.into_iter().enumerate() {
        let Some(h) = Table::of(g, format!("hosts group {} of {what}", i + 1), t.diags) else {
            continue;
        };
        let count = h.uint("count", MAX_CLUSTER_HOSTS);
        if let Some((0, loc)) = count {
            h.diags.error(
                loc,
                format!("{what} has zero hosts"),
                Some("a cluster needs at least one host: count = 1 or more".into()),
            );
        }
        if h.get("count").is_none() {
            h.missing("count", "how many hosts of this kind, e.g. count = 4");
        }
        let cores = h.positive("cores", MAX_HOST_CORES).map(|(v, _)| v as u32);
        let memory_mb = h.positive("memory_mb", 1 << 40).map(|(v, _)| v);
        let mips = h
            .positive("mips", 1 << 30)
            .map_or(Some(1000), |(v, _)| Some(v as u32));
        for (k, v) in [
            ("cores", cores.is_some()),
            ("memory_mb", memory_mb.is_some()),
        ] {
            if !v && h.get(k).is_none() {
                h.missing(k, "hosts need cores and memory_mb");
            }
        }
        h.finish();
        let Some((n, loc)) = count else { continue };
        in_cluster += n;
        *total += n;
        if over_host_limits(&h, what, (n, loc), (in_cluster, *total)) {
            continue;
        }
        if let (Some(cores), Some(memory_mb), Some(mips)) = (cores, memory_mb, mips) {
            hosts.extend((0..n).map(|_| HostSpec {
                cores,
                memory_mb,
                mips,
            }));
        }
    }
    hosts
}

/// Whether a hosts group of `n` hosts (at `loc`) takes its cluster (`in_cluster` hosts so
/// far, this group's included) or the topology (`total`) past their limits; says so the
/// first time each is passed.
pub(super) fn over_host_limits(
    h: &Table<'_>,
    what: &str,
    (n, loc): (u64, &Loc),
    (in_cluster, total): (u64, u64),
) -> bool {
    if in_cluster > MAX_CLUSTER_HOSTS && in_cluster - n <= MAX_CLUSTER_HOSTS {
        h.diags.error(
            loc,
            format!("{what} has {in_cluster} hosts so far, more than {MAX_CLUSTER_HOSTS}"),
            Some(format!(
                "a cluster has at most {MAX_CLUSTER_HOSTS} hosts (hosts are numbered in 16 bits); split it into several clusters"
            )),
        );
    }
    if total > MAX_TOPOLOGY_HOSTS && total - n <= MAX_TOPOLOGY_HOSTS {
        h.diags.error(
            loc,
            format!("the topology has {total} hosts so far, more than {MAX_TOPOLOGY_HOSTS}"),
            Some(format!(
                "a topology has at most {MAX_TOPOLOGY_HOSTS} hosts: each host and VM takes about 1 KB while a run lasts (docs/performance.md)"
            )),
        );
    }
    in_cluster > MAX_CLUSTER_HOSTS || total > MAX_TOPOLOGY_HOSTS
}

/// Finds grids by name for the sections that name them.
pub(super) struct GridNames<'a> {
    /// The topology's grids.
    pub grids: &'a [Grid],
    /// Where problems go.
    pub diags: &'a Diags,
}

impl GridNames<'_> {
    /// The grid called `name`, or a problem at `loc` (`role` says who names it).
    pub(crate) fn find(&self, name: &str, loc: &Loc, role: &str) -> Option<GridId> {
        match self.grids.iter().position(|g| g.name == name) {
            Some(i) => Some(GridId(i as u16)),
            None => {
                let names: Vec<_> = self.grids.iter().map(|g| shown(&g.name)).collect();
                let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
                self.diags.error(
                    loc,
                    format!("{role} names unknown grid `{}`", shown(name)),
                    Some(suggest(&shown(name), &names)),
                );
                None
            }
        }
    }
}

/// The `[[grid]]`s and their clusters, with the topology's `[lrms]` and `[igg]` defaults.
pub(super) fn read_grids(
    top: &Table<'_>,
    lrms_defaults: &LrmsOverrides<'_>,
    igg_defaults: &IggOverrides,
    cx: &mut ReadCx<'_>,
) -> (Vec<Grid>, Vec<Cluster>) {
    let diags = cx.diags;
    let mut grids: Vec<Grid> = Vec::new();
    let mut clusters: Vec<Cluster> = Vec::new();
    let grid_nodes = top.tables("grid");
    require_tables(
        top,
        ("grid", grid_nodes.is_empty()),
        "`grid` is empty: the topology has no Grid".into(),
        "add at least one [[grid]] with a [[grid.cluster]]",
    );
    for (gi, gnode) in grid_nodes.into_iter().enumerate() {
        let Some(g) = Table::of(gnode, format!("grid #{}", gi + 1), diags) else {
            continue;
        };
        let gname = g
            .req_str("name", "every grid needs a unique name")
            .map(|(s, loc)| {
                check_name(diags, loc, s, "grid name");
                if grids.iter().any(|x| x.name == s) {
                    diags.error(
                        loc,
                        format!("grid `{}` is defined twice", shown(s)),
                        Some("grid names must be unique".into()),
                    );
                }
                s.to_string()
            });
        let what = format!("grid `{}`", gname.as_deref().map_or("?".into(), shown));
        let igg_own = g
            .table("igg")
            .map(|t| read_igg_table(&t, cx.registry))
            .unwrap_or_default();
        let igg = merge_igg(igg_own, igg_defaults, cx.registry);
        let gid = GridId(grids.len() as u16);
        let mut ids = Vec::new();
        let cluster_nodes = g.tables("cluster");
        require_tables(
            &g,
            ("cluster", cluster_nodes.is_empty()),
            format!("`cluster` of {what} is empty: the Grid has no cluster"),
            "a grid needs at least one [[grid.cluster]]",
        );
        for (ci, cnode) in cluster_nodes.into_iter().enumerate() {
            let siblings: Vec<&Cluster> = ids
                .iter()
                .map(|id: &ClusterId| &clusters[usize::from(id.0)])
                .collect();
            if let Some(cluster) = read_cluster(
                cnode,
                ci,
                (gid, &what, igg.provider),
                &siblings,
                lrms_defaults,
                cx,
            ) {
                ids.push(ClusterId(clusters.len() as u16));
                clusters.push(cluster);
            }
        }
        g.finish();
        if let Some(name) = gname {
            grids.push(Grid {
                name,
                igg,
                clusters: ids,
            });
        }
    }
    (grids, clusters)
}

/// One `[[grid.cluster]]` of grid `gid` (`what` names the grid); `siblings` are the grid's
/// clusters read so far.
pub(super) fn read_cluster(
    cnode: &Node,
    ci: usize,
    (gid, what, provider): (GridId, &str, Option<ProviderPolicy>),
    siblings: &[&Cluster],
    lrms_defaults: &LrmsOverrides<'_>,
    cx: &mut ReadCx<'_>,
) -> Option<Cluster> {
    let diags = cx.diags;
    let c = Table::of(cnode, format!("cluster #{} of {what}", ci + 1), diags)?;
    let cname = c
        .req_str("name", "every cluster needs a name, unique in its grid")
        .map(|(s, loc)| {
            check_name(diags, loc, s, "cluster name");
            if siblings.iter().any(|x| x.name == s) {
                diags.error(
                    loc,
                    format!("cluster `{}` is defined twice in {what}", shown(s)),
                    Some("cluster names must be unique within a grid".into()),
                );
            }
            s.to_string()
        });
    let cwhat = format!(
        "cluster `{}` of {what}",
        cname.as_deref().map_or("?".into(), shown)
    );
    let hosts = read_hosts(&c, &cwhat, &mut cx.hosts);
    let own_table = c.table("lrms");
    let own = own_table
        .as_ref()
        .map(|t| read_lrms_table(t, cx.registry))
        .unwrap_or_default();
    if let (Some(p), Some(s), Some(t)) = (provider, own.scheduler, own_table.as_ref()) {
        check_provider_scheduler(t, p, s, &cwhat);
    }
    c.finish();
    let profile_name = own.profile.or(lrms_defaults.profile);
    let profile = match profile_name {
        Some((p, loc)) => cx.profile(p, loc),
        None => cx.profile(DEFAULT_PROFILE, &Loc::Builtin),
    };
    let (name, profile) = (cname?, profile?);
    if hosts.is_empty() {
        return None;
    }
    let pivots = (own.pivots.or(lrms_defaults.pivots)).unwrap_or(profile.pivots);
    let mut lrms = merge_lrms(&own, lrms_defaults, profile);
    if let Some(p) = provider {
        // §6.3: EASY or conservative; partitions give locals priority. §4.2's EASY has "a
        // configurable maximum number of pivots, similarly to MAUI": `lrms.pivots` (1 unless
        // set), each partition's own.
        lrms.backfilling = if p.easy() {
            crate::lrms::Backfilling::Easy { pivots }
        } else {
            crate::lrms::Backfilling::Conservative
        };
        lrms.partitions = p.partitions();
    }
    Some(Cluster {
        name,
        grid: gid,
        hosts,
        lrms,
    })
}

/// Reports array-of-tables `key` of `t` missing, or present but empty (`empty` says what
/// that means); `hint` says how to add one.
pub(super) fn require_tables(
    t: &Table<'_>,
    (key, none_read): (&str, bool),
    empty: String,
    hint: &str,
) {
    match t.get(key) {
        None => t.missing(key, hint),
        Some(n) if none_read && matches!(n.kind, node::NodeKind::Array(_)) => {
            t.diags.error(&n.loc, empty, Some(hint.into()));
        }
        Some(_) => {}
    }
}
