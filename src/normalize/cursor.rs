//! cursor.com/docs: Markdown alternates in the live `.md` format.
//!
//! Each alternate opens with `export const meta = {title, description};` and
//! `# Title`, carries Mintlify-era MDX components in the body, and ends with a
//! `## Sitemap` footer linking `/llms.txt` that the HTML page does not show.

use super::mdx::{self, Dialect};
use super::{NormalizeError, Normalized};
use crate::markdown::{FenceLine, FenceTracker};

/// Normalize a cursor.com Markdown alternate.
pub fn normalize(body: &str, public_url: &str) -> Result<Normalized, NormalizeError> {
    let text = mdx::prepare(body);
    let text = strip_sitemap_footer(&text);
    let (header, rest) = mdx::take_header(text);
    mdx::finish(header, &rest, public_url, DIALECT)
}

/// cursor.com ids h2–h4 only; its pages use Mintlify's components.
const DIALECT: Dialect = Dialect {
    anchored_levels: (2, 4),
    slug_html_headings: false,
    components: &[super::mintlify::render],
};

/// Cut the trailing `---` / `## Sitemap` / link-lines footer.
pub(crate) fn strip_sitemap_footer(text: &str) -> &str {
    let mut fences = FenceTracker::default();
    let mut offset = 0;
    let mut footer_at = None;
    for line in text.split_inclusive('\n') {
        let l = line.trim_end();
        if fences.line(l) == FenceLine::Outside && l.trim() == "## Sitemap" {
            footer_at = Some(offset);
        }
        offset += line.len();
    }
    let Some(at) = footer_at else {
        return text;
    };
    // Only links and blank lines may follow the footer heading.
    let tail = &text[at..];
    let only_links = tail.lines().skip(1).all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('[') || t.starts_with("- [") || t.starts_with("* [")
    });
    if !only_links {
        return text;
    }
    let head = text[..at].trim_end();
    let head = head.strip_suffix("---").map(str::trim_end).unwrap_or(head);
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_header_and_sitemap_footer_are_lifted() {
        let src = "export const meta = {\n  title: \"Planning\",\n  description: \"How Agent plans\"\n};\n\n# Planning\n\nAgent plans. Press <Kbd>Ctrl+Enter</Kbd>.\n\n## Queue\n\n<Tip>\n  Use the queue.\n</Tip>\n\n---\n\n## Sitemap\n\n[Overview of all docs pages](/llms.txt)\n";
        let n = normalize(src, "https://cursor.com/docs/agent/planning").expect("normalizes");
        assert_eq!(n.title, "Planning");
        assert_eq!(n.description, "How Agent plans");
        assert_eq!(
            n.markdown,
            "Agent plans. Press `Ctrl+Enter`.\n\n## Queue\n\n> **Tip:** Use the queue."
        );
    }

    #[test]
    fn deep_headings_have_no_anchor_of_their_own() {
        // cursor.com ids h2–h4 only: an h5 links to its enclosing section.
        let src = "# T\n\n## A\n\n##### Deep\n\nx\n";
        let n = normalize(src, "https://cursor.com/docs/t").expect("normalizes");
        assert_eq!(
            n.anchors(),
            vec![
                crate::model::HeadingAnchor::Slug,
                crate::model::HeadingAnchor::Unanchored
            ]
        );
        // What section makes of it: build::tests::a_heading_without_id_links_to_its_enclosing_section.
    }

    #[test]
    fn sitemap_inside_code_is_kept() {
        let src = "# T\n\n```md\n## Sitemap\n\n[x](/llms.txt)\n```\n";
        assert_eq!(strip_sitemap_footer(src), src);
    }
}
