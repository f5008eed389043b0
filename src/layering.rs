//! A check of the crate's layering (tests only): no two top-level modules import each other,
//! directly or through others (issue 41: "no import circle between modules of different
//! purpose"). It reads the sources, as a reviewer would: every `crate::NAME` path outside
//! comments and test code, with names `lib.rs` re-exports resolved to their module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module → the modules it uses → one file that does (for the message).
type Uses = BTreeMap<String, BTreeMap<String, String>>;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules: each `src/NAME.rs` and `src/NAME/` but the crate roots.
fn top_modules(src: &Path) -> BTreeSet<String> {
    let entries = std::fs::read_dir(src).expect("src/ is readable in a test build");
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let module = match name.strip_suffix(".rs") {
                Some(stem) => stem.to_string(),
                None if e.path().is_dir() => name,
                None => return None,
            };
            (module != "lib" && module != "main").then_some(module)
        })
        .collect()
}

/// The code of a file without its comments and its test code (from the first `#[cfg(test)]`
/// on: test modules come last in this crate's files).
fn code_of(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment of every path that starts with `crate::`, `crate::{a::b, c}` included.
fn crate_paths(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = group.split('}').next().unwrap_or("");
                names.extend(group.split(',').map(|p| ident(p.trim())));
            }
            None => names.push(ident(rest)),
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// What `lib.rs` re-exports at the crate root (`pub use MODULE::…::{A, B};`), by name.
fn root_aliases(lib: &str) -> BTreeMap<String, String> {
    let mut aliases = BTreeMap::new();
    for statement in lib.split("pub use ").skip(1) {
        let statement = statement.split(';').next().unwrap_or("");
        let module = statement
            .split("::")
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        let names = statement.rsplit("::").next().unwrap_or("");
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            aliases.insert(name.trim().to_string(), module.clone());
        }
    }
    aliases
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.filter_map(|e| e.ok()).map(|e| e.path()) {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Which top-level module uses which, from the sources under `src`.
fn uses(src: &Path) -> Uses {
    let modules = top_modules(src);
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let aliases = root_aliases(&lib);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut uses = Uses::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap_or(&file);
        let first = relative.components().next();
        let first = first.map(|c| c.as_os_str().to_string_lossy().into_owned());
        let Some(from) = first.map(|f| f.trim_end_matches(".rs").to_string()) else {
            continue;
        };
        let is_tests = relative.file_name().is_some_and(|n| n == "tests.rs");
        if !modules.contains(&from) || is_tests {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for name in crate_paths(&code_of(&text)) {
            let to = if modules.contains(&name) {
                name
            } else {
                match aliases.get(&name) {
                    Some(m) if modules.contains(m) => m.clone(),
                    _ => continue,
                }
            };
            if to != from {
                let shown = relative.display().to_string();
                uses.entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert(shown);
            }
        }
    }
    uses
}

/// A circle of imports through `start`, if there is one: the modules in order, `start` first.
fn circle_through(uses: &Uses, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in uses.get(&at).into_iter().flat_map(|m| m.keys()) {
            if next == start {
                return Some(path);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let uses = uses(&src_dir());
    assert!(
        uses.len() > 10,
        "the scan found the crate's imports ({} modules use others)",
        uses.len()
    );
    for module in uses.keys() {
        if let Some(circle) = circle_through(&uses, module) {
            let steps: Vec<String> = circle
                .iter()
                .zip(circle.iter().cycle().skip(1))
                .map(|(a, b)| format!("{a} -> {b} (in {})", uses[a][b]))
                .collect();
            panic!("an import circle: {}", steps.join(", "));
        }
    }
}

#[test]
fn the_scan_sees_paths_groups_and_root_re_exports() {
    let code = code_of("use crate::{time, igg::Published}; // crate::fault\nlet x = crate::Error;");
    assert_eq!(crate_paths(&code), ["time", "igg", "Error"]);
    let aliases = root_aliases("pub use a::b::{C, D};\npub use e::F;");
    assert_eq!(aliases["D"], "a");
    assert_eq!(aliases["F"], "e");
    let mut uses = Uses::new();
    for (a, b) in [("x", "y"), ("y", "z"), ("z", "x")] {
        uses.entry(a.into())
            .or_default()
            .insert(b.into(), "f.rs".into());
    }
    assert_eq!(circle_through(&uses, "x").map(|c| c.len()), Some(3));
    uses.get_mut("z").map(|m| m.remove("x"));
    assert_eq!(circle_through(&uses, "x"), None);
}
