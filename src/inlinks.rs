//! Links between the pages of one snapshot, counted per target page and
//! per target section: the popularity prior of the ranking ("the docs send
//! readers here often"). Counted once at build time into the artifact's
//! `links.json`, so a server does not scan every page's Markdown for links
//! at start-up; artifacts written before that file existed are counted at
//! load with the same code.

use std::collections::HashMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::model::{Page, Section};
use crate::util::canonical_page_key;

/// Incoming links of every section and page, in record order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LinkCounts {
    /// Per section (every part of a split section shares its anchor's count).
    pub sections: Vec<u32>,
    /// Per page.
    pub pages: Vec<u32>,
}

impl LinkCounts {
    /// Whether these counts belong to `pages` and `sections` (same lengths).
    pub fn fits(&self, pages: usize, sections: usize) -> bool {
        self.pages.len() == pages && self.sections.len() == sections
    }
}

/// An inline link as docsnap writes them: `](url)`, or `](<url>)` when the
/// URL holds spaces or parentheses.
static MD_LINK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"\]\((?:<(https?://[^>\n]+)>|(https?://[^)\s]+))\)").expect("valid regex")
});

/// Each page's canonical URL key → its index.
pub fn page_keys(pages: &[Page]) -> HashMap<String, usize> {
    let mut m = HashMap::with_capacity(pages.len());
    for (i, p) in pages.iter().enumerate() {
        m.insert(canonical_page_key(&p.url), i);
    }
    m
}

/// The range of `sections` each page owns; sections are grouped by page
/// (as `sections.jsonl` is), a page without sections gets an empty range.
pub fn page_ranges(
    pages: usize,
    sections: &[Section],
    keys: &HashMap<String, usize>,
) -> Vec<Range<usize>> {
    let mut out = vec![0..0; pages];
    let mut i = 0;
    while i < sections.len() {
        let start = i;
        let url = &sections[i].url;
        while i < sections.len() && &sections[i].url == url {
            i += 1;
        }
        if let Some(&p) = keys.get(&canonical_page_key(url)) {
            out[p] = start..i;
        }
    }
    out
}

/// Count the links of one snapshot, records in artifact order. A link from
/// a page to itself does not count.
pub fn count_records(pages: &[Page], sections: &[Section]) -> LinkCounts {
    let keys = page_keys(pages);
    let ranges = page_ranges(pages.len(), sections, &keys);
    let mut by_anchor: HashMap<(usize, &str), u32> = HashMap::new();
    let mut page = vec![0u32; pages.len()];
    for (from, pg) in pages.iter().enumerate() {
        for c in MD_LINK.captures_iter(&pg.markdown) {
            let target = c.get(1).or(c.get(2)).map_or("", |m| m.as_str());
            let (base, frag) = target.split_once('#').unwrap_or((target, ""));
            let Some(&to) = keys.get(&canonical_page_key(base)) else {
                continue;
            };
            if to == from {
                continue;
            }
            page[to] += 1;
            *by_anchor.entry((to, frag)).or_insert(0) += 1;
        }
    }
    let mut sec = vec![0u32; sections.len()];
    for (p, r) in ranges.iter().enumerate() {
        for i in r.clone() {
            sec[i] = by_anchor
                .get(&(p, sections[i].anchor.as_str()))
                .copied()
                .unwrap_or(0);
        }
    }
    LinkCounts {
        sections: sec,
        pages: page,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str, markdown: &str) -> Page {
        Page {
            url: url.into(),
            title: "T".into(),
            description: String::new(),
            markdown: markdown.into(),
            sha256: String::new(),
            path: String::new(),
            etag: None,
            last_modified: None,
        }
    }

    fn sec(url: &str, anchor: &str, part: u32) -> Section {
        Section {
            url: url.into(),
            anchor: anchor.into(),
            heading_path: vec!["T".into()],
            level: 2,
            text: "x".into(),
            ordinal: 0,
            part,
        }
    }

    #[test]
    fn links_count_per_target_page_and_anchor() {
        let a = "https://d.example/a";
        let b = "https://d.example/b";
        let pages = [
            // Two links to b#x, one to b, one to itself (not counted), one
            // off-site (not counted).
            page(
                a,
                "[x](https://d.example/b#x) [x again](https://d.example/b#x) \
                 [b](https://d.example/b) [me](https://d.example/a#top) [o](https://o.example/)",
            ),
            // Another spelling of a's URL still counts, and so does an
            // angle-bracketed destination.
            page(
                b,
                "[a](https://d.example/a/) [a top](<https://d.example/a#top>)",
            ),
        ];
        let sections = [
            sec(a, "", 0),
            sec(a, "top", 0),
            sec(b, "", 0),
            sec(b, "x", 0),
            sec(b, "x", 1),
        ];
        let c = count_records(&pages, &sections);
        assert_eq!(c.pages, [2, 3]);
        // Both parts of b#x share its count; the lead (anchor "") holds
        // the links to the page itself.
        assert_eq!(c.sections, [1, 1, 1, 2, 2]);
        assert!(c.fits(2, 5) && !c.fits(2, 4));
    }
}
