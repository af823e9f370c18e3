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

#[derive(Default)]
struct Depth {
    now: Cell<usize>,
    max: Cell<usize>,
}

impl TokenSink for Depth {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let Token::TagToken(tag) = token else {
            return TokenSinkResult::Continue;
        };
        let name = &*tag.name;
        if NOT_NESTING.contains(&name) || tag.self_closing {
            return TokenSinkResult::Continue;
        }
        match tag.kind {
            TagKind::StartTag => {
                let d = self.now.get() + 1;
                self.now.set(d);
                self.max.set(self.max.get().max(d));
                // Text inside these is not markup; reading it as tags would
                // count a script's string literals as nesting.
                if let Some(state) = text_state_after(name, false) {
                    return state;
                }
            }
            TagKind::EndTag => self.now.set(self.now.get().saturating_sub(1)),
        }
        TokenSinkResult::Continue
    }
}

/// The deepest nesting of elements in `html` (an upper bound of what the
/// tree builder makes of it: misnested end tags are not reconciled).
pub fn depth(html: &str) -> usize {
    tokenize(html, Depth::default()).max.get()
}

/// A page nested deeper than [`MAX_NESTING`] is an error naming the depth.
pub fn check(html: &str, public_url: &str) -> Result<(), NormalizeError> {
    let d = depth(html);
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
