//! How deep a page nests its elements, read by html5ever's tokenizer alone
//! (linear in the page) before the tree builder sees it.
//!
//! The tree builder's scope checks walk the stack of open elements, so its
//! time grows with the square of the nesting depth: 0.05 s at 2,000 levels,
//! 0.95 s at 8,000 and 5.5 s at 16,000 (a 290 KB page the fuzz soak made).
//! Documentation nests tens of elements deep; a page past [`MAX_NESTING`]
//! is hostile or broken and fails as such, instead of costing a build
//! seconds of CPU.

use std::cell::Cell;

use html5ever::tokenizer::{TagKind, Token, TokenSink, TokenSinkResult};

use super::html_tokens::{text_state_after, tokenize};
use super::NormalizeError;

/// Deepest element nesting a page may have.
pub const MAX_NESTING: usize = 4_096;

/// Elements without content, and those whose end tag the tree builder
/// implies when a sibling starts (`<li>a<li>b` is two items, not nesting):
/// neither deepens the page.
const NOT_NESTING: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "li", "p", "dt", "dd", "tr", "td", "th", "option", "optgroup", "rb", "rt", "rp",
    "thead", "tbody", "tfoot", "colgroup", "caption",
];

/// Nesting depth as tags stream by, for any token sink that reads a page
/// (this module's check, and the crawl's link scan, which measures the depth
/// in the same pass so that a crawled page is tokenized once, not twice).
#[derive(Default)]
pub struct Gauge {
    now: Cell<usize>,
    max: Cell<usize>,
}

impl Gauge {
    /// Count one tag; the tokenizer state to switch to after it, if its
    /// content is text, not markup (a script's string literals must not
    /// count as nesting).
    pub fn tag<H>(
        &self,
        name: &str,
        kind: TagKind,
        self_closing: bool,
    ) -> Option<TokenSinkResult<H>> {
        let nests = !(NOT_NESTING.contains(&name) || self_closing);
        match kind {
            TagKind::StartTag => {
                if nests {
                    let d = self.now.get() + 1;
                    self.now.set(d);
                    self.max.set(self.max.get().max(d));
                }
                text_state_after(name, self_closing)
            }
            TagKind::EndTag => {
                if nests {
                    self.now.set(self.now.get().saturating_sub(1));
                }
                None
            }
        }
    }

    /// The deepest nesting seen so far.
    pub fn max(&self) -> usize {
        self.max.get()
    }
}

#[derive(Default)]
struct Depth(Gauge);

impl TokenSink for Depth {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag) => self
                .0
                .tag(&tag.name, tag.kind, tag.self_closing)
                .unwrap_or(TokenSinkResult::Continue),
            _ => TokenSinkResult::Continue,
        }
    }
}

/// The deepest nesting of elements in `html` (an upper bound of what the
/// tree builder makes of it: misnested end tags are not reconciled).
pub fn depth(html: &str) -> usize {
    tokenize(html, Depth::default()).0.max()
}

/// A page nested deeper than [`MAX_NESTING`] is an error naming the depth.
pub fn check(html: &str, public_url: &str) -> Result<(), NormalizeError> {
    check_depth(depth(html), public_url)
}

/// [`check`] of a depth already measured (by [`Gauge`] in another pass).
pub fn check_depth(d: usize, public_url: &str) -> Result<(), NormalizeError> {
    if d > MAX_NESTING {
        return Err(NormalizeError::TooDeep {
            url: public_url.to_string(),
            depth: d,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_real_nesting_only() {
        assert_eq!(depth("<main><div><p>a<p>b</div></main>"), 2);
        assert_eq!(depth("<ul><li>a<li>b<li>c</ul>"), 1);
        assert_eq!(depth("<div><br><img src=x><hr></div>"), 1);
        assert_eq!(
            depth("<div><script>if (a<b) { x = '<div><div><div>'; }</script></div>"),
            2
        );
        let deep = format!("{}{}", "<ul><li>".repeat(5_000), "</li></ul>".repeat(5_000));
        assert_eq!(depth(&deep), 5_000);
    }

    #[test]
    fn a_page_nested_too_deep_is_refused_by_name() {
        let deep = format!("<main>{}</main>", "<div>".repeat(MAX_NESTING + 10));
        let e = check(&deep, "https://x/y").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("https://x/y") && msg.contains("4107"), "{msg}");
        assert!(check("<main><div>fine</div></main>", "https://x/y").is_ok());
    }
}
