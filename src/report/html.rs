//! The page around a report's sections: its frame (style, the self-check script), tables
//! capped in rows, columns and cell length, and the budget that keeps the whole page under
//! [`PAGE_CAP`] bytes whatever the run.

use std::fmt::Write as _;

use serde_json::Value;

use super::svg::{self, escape, number};

/// The most bytes a report page holds. Charts and table rows that would pass it are left out,
/// and the page says so; each chart is also capped on its own (see `docs/limits.md`).
pub const PAGE_CAP: usize = 20_000_000;

/// Room kept for the page's frame (style, script, header, footer) and for the notes written
/// after a chart or row was refused room.
const RESERVE: usize = 64 << 10;

/// Rows a table shows at most; the rest are counted, and the note says where they all are.
pub(super) const TABLE_ROWS: usize = 300;

/// Columns a table shows at most (a column per cluster or Grid can make thousands).
pub(super) const TABLE_COLUMNS: usize = 40;

/// Characters a table cell shows at most (a value of `sweep.json` can list a million seeds).
pub(super) const CELL_CHARS: usize = 4_000;

/// The bytes `body` may still grow by before the page reaches [`PAGE_CAP`].
pub(super) fn room(body: &str) -> usize {
    PAGE_CAP.saturating_sub(RESERVE + body.len())
}

/// Appends `chart` to `body` if the page has room for it; else counts it in `left_out`.
pub(super) fn push_chart(body: &mut String, chart: &str, left_out: &mut usize) {
    if chart.len() <= room(body) {
        body.push_str(chart);
    } else {
        *left_out += 1;
    }
}

/// The note for `left_out` charts of `what` that did not fit on the page, if any; `source`
/// holds their data.
pub(super) fn left_out_note(body: &mut String, left_out: usize, what: &str, source: &str) {
    if left_out > 0 {
        let _ = write!(
            body,
            "<p class=\"note\">{left_out} more {what} not drawn: a report page holds at most {} MB (docs/limits.md). Their data are in {}.</p>",
            PAGE_CAP / 1_000_000,
            escape(source)
        );
    }
}

/// Runs `write` (a section's writer, which appends to `body` or, with nothing to show,
/// nothing) and wraps what it appended in `<section data-section="name">`, so a section can
/// be picked out (printed, or shot for the docs) by its name.
pub(super) fn section<E>(
    body: &mut String,
    name: &str,
    write: impl FnOnce(&mut String) -> Result<(), E>,
) -> Result<(), E> {
    let start = body.len();
    write(body)?;
    if body.len() > start {
        body.insert_str(
            start,
            &format!("<section data-section=\"{}\">", escape(name)),
        );
        body.push_str("</section>");
    }
    Ok(())
}

/// The page around `body`: inlined style, the striped patterns, and the self-check script.
pub(super) fn page(title: &str, nav: &[(&str, &str)], body: &str) -> String {
    let mut html = String::with_capacity(body.len() + 4096);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{}{}</style></head><body>",
        escape(title),
        PAGE_STYLE,
        svg::style()
    );
    html.push_str(&svg::shared_defs());
    let _ = write!(html, "<header><h1>{}</h1><nav>", escape(title));
    for (anchor, name) in nav {
        let _ = write!(html, "<a href=\"#{anchor}\">{}</a>", escape(name));
    }
    html.push_str("</nav></header><main>");
    html.push_str(body);
    let _ = writeln!(
        html,
        "</main><footer>Written by igemu {} (<code>igemu report</code>). Charts are static SVG; hover a bar or point for its values.</footer><script>{SELF_CHECK}</script></body></html>",
        escape(crate::build_info::long_version())
    );
    html
}

const PAGE_STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fff}\
header{position:sticky;top:0;background:#fafafa;border-bottom:1px solid #ddd;padding:8px 20px;z-index:1}\
h1{font-size:20px;margin:0 0 4px}nav a{margin-right:14px;color:#0645ad;text-decoration:none}\
main{padding:0 20px 30px;max-width:1160px}h2{margin-top:32px;border-bottom:1px solid #ddd}\
h3{margin:22px 0 6px;font-size:15px}table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top;white-space:pre-line;overflow-wrap:anywhere}td:first-child{overflow-wrap:normal}\
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;overflow-wrap:normal}th{background:#f3f3f3;overflow-wrap:normal}\
.note{color:#555;font-size:13px}.key{display:flex;flex-wrap:wrap;gap:14px;font-size:13px;margin:6px 0}\
.key span{display:inline-flex;align-items:center;gap:5px}.sw{display:inline-block;width:22px;height:11px;border:1px solid #999}\
footer{padding:16px 20px;color:#666;font-size:12px;border-top:1px solid #ddd}\
.scroll{overflow-x:auto}code{font-size:12px}\
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0 16px}.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:120px;font-size:12px;color:#555;background:#fcfcfc}\
.card b{display:block;font-size:19px;color:#111;font-weight:600}";

/// Records, on the body, how many charts there are, which drew (their `data-chart` names)
/// and which did not, any script error, how many in-page links (nav, Gantt bars) there are
/// and those whose target is missing, and the element the URL's `#fragment` names — what
/// the browser test reads from the DOM.
const SELF_CHECK: &str = "(function(){var errors=[];window.addEventListener('error',function(e){errors.push(String(e.message))});\
var log=console.error;console.error=function(){errors.push(Array.prototype.join.call(arguments,' '));log.apply(console,arguments)};\
function check(){var charts=document.querySelectorAll('svg.chart'),empty=[],drawn=[];\
for(var i=0;i<charts.length;i++){var b=charts[i].getBBox(),n=charts[i].getAttribute('data-chart');if(charts[i].childElementCount<3||b.width<=0||b.height<=0){empty.push(n)}else{drawn.push(n)}}\
document.body.setAttribute('data-charts',String(charts.length));document.body.setAttribute('data-empty-charts',empty.join('|'));document.body.setAttribute('data-drawn',drawn.join('|'));\
document.body.setAttribute('data-errors',errors.join('|'));\
var hrefs=document.querySelectorAll('a[href^=\"#\"]'),broken=[];for(var j=0;j<hrefs.length;j++){var id=hrefs[j].getAttribute('href').slice(1);if(!document.getElementById(id)&&broken.length<10){broken.push(id)}}\
var target=location.hash?document.getElementById(decodeURIComponent(location.hash.slice(1))):null;\
document.body.setAttribute('data-links',String(hrefs.length));document.body.setAttribute('data-broken-links',broken.join('|'));\
document.body.setAttribute('data-target',target?target.id+' '+target.tagName.toLowerCase():'');document.body.setAttribute('data-checked','yes')}\
if(document.readyState==='complete'){check()}else{window.addEventListener('load',check)}})();";

/// A table of `rows` (all of them in memory): see [`table_of`].
pub(super) fn table(out: &mut String, header: &[&str], rows: &[Vec<String>], numeric_from: usize) {
    table_of(
        out,
        header,
        rows,
        numeric_from,
        (rows.len(), "summary.json"),
    );
}

/// A table of `rows`, cells from column `numeric_from` on aligned as numbers; `total` rows in
/// all, which `whole` holds. At most [`TABLE_ROWS`] rows and [`TABLE_COLUMNS`] columns are
/// shown, cells cut at [`CELL_CHARS`], rows stopped where the page is full; a note says what
/// was left out and where the whole table is.
pub(super) fn table_of(
    out: &mut String,
    header: &[&str],
    rows: &[Vec<String>],
    numeric_from: usize,
    (total, whole): (usize, &str),
) {
    titled_table(out, header, rows, numeric_from, (total, whole), &[]);
}

/// A table of figures: [`table`], each row's first cell with a tooltip, `titles[i]` for row
/// `i` (the raw key a readable name stands for).
pub(super) fn figure_table(
    out: &mut String,
    header: &[&str],
    rows: &[Vec<String>],
    titles: &[String],
) {
    titled_table(out, header, rows, 1, (rows.len(), "summary.json"), titles);
}

/// [`table_of`], the first cell of row `i` with the tooltip `titles[i]` when there is one.
fn titled_table(
    out: &mut String,
    header: &[&str],
    rows: &[Vec<String>],
    numeric_from: usize,
    (total, whole): (usize, &str),
    titles: &[String],
) {
    let columns = header.len().min(TABLE_COLUMNS);
    out.push_str("<div class=\"scroll\"><table><tr>");
    for h in &header[..columns] {
        let _ = write!(out, "<th>{}</th>", escape(&cut(h)));
    }
    out.push_str("</tr>");
    let mut shown = 0;
    let mut line = String::new();
    for (i, row) in rows.iter().take(TABLE_ROWS).enumerate() {
        line.clear();
        line.push_str("<tr>");
        for (k, cell) in row.iter().take(columns).enumerate() {
            let class = if k >= numeric_from {
                " class=\"n\"".to_string()
            } else {
                match titles.get(i).filter(|_| k == 0) {
                    Some(t) => format!(" title=\"{}\"", escape(&cut(t))),
                    None => String::new(),
                }
            };
            let _ = write!(line, "<td{class}>{}</td>", escape(&cut(cell)));
        }
        line.push_str("</tr>");
        if line.len() > room(out) {
            break;
        }
        out.push_str(&line);
        shown += 1;
    }
    out.push_str("</table></div>");
    table_note(out, (shown, total, whole), (columns, header.len()));
}

/// What a table left out: rows (`shown` of `total`, all in `whole`) and columns.
fn table_note(
    out: &mut String,
    (shown, total, whole): (usize, usize, &str),
    (columns, all): (usize, usize),
) {
    if shown < total {
        let _ = write!(
            out,
            "<p class=\"note\">{shown} of {total} rows shown; the whole table is in {}.</p>",
            escape(whole)
        );
    }
    if columns < all {
        let _ = write!(
            out,
            "<p class=\"note\">{columns} of {all} columns shown; the others are in {}.</p>",
            escape(whole)
        );
    }
}

/// `text` cut after [`CELL_CHARS`] characters, marked with `…`.
fn cut(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(CELL_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]).into(),
        None => text.into(),
    }
}

/// A summary value for a table: seconds also as a duration, percents with `%`.
pub(super) fn figure(key: &str, v: &Value) -> String {
    match v.as_f64() {
        Some(x) if key.ends_with("_s") && x.abs() >= 120.0 => {
            format!("{} ({})", number(x), svg::duration(x))
        }
        Some(x) if key.ends_with("_pct") => format!("{} %", number(x)),
        Some(x) => number(x),
        None => match v {
            Value::String(s) => s.clone(),
            Value::Null => "–".into(),
            Value::Bool(b) => b.to_string(),
            other => other.to_string(),
        },
    }
}

/// A JSON value as a reader wants it in a table cell: strings bare, lists joined by commas,
/// a varied key as `key: values`, objects one `key: value` per line.
pub(super) fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".into(),
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            items.iter().map(plain).collect::<Vec<_>>().join(", ")
        }
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => match (o.get("key"), o.get("values")) {
            (Some(k), Some(values)) if o.len() == 2 => format!("{}: {}", plain(k), plain(values)),
            _ if o.is_empty() => "none".into(),
            _ => o
                .iter()
                .map(|(k, v)| format!("{k}: {}", plain(v)))
                .collect::<Vec<_>>()
                .join("\n"),
        },
        other => other.to_string(),
    }
}
