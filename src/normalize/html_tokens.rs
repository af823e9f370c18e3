//! html5ever's tokenizer without a tree builder: a linear pass over a page
//! for readers that need tags, not a DOM (link extraction in the crawl, the
//! nesting check before parsing). Both must switch the tokenizer into text
//! after the same start tags the tree builder does, or a script's string
//! literals would read as markup.

use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};

/// Run the tokenizer over `html`, feeding `sink`; the sink, afterwards.
pub fn tokenize<S: TokenSink>(html: &str, sink: S) -> S {
    let tok = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(html.into());
    let _ = tok.feed(&input);
    tok.end();
    tok.sink
}

/// The state a start tag named `name` puts the tokenizer in when what
/// follows is text, not markup (the elements the tree builder reads as text,
/// scripting on, as in browsers); `None` for every other tag. A self-closed
/// `<script … />` is taken at its word, unlike the spec, so a page whose
/// generator wrote one does not hide the rest of its markup.
pub fn text_state_after<H>(name: &str, self_closing: bool) -> Option<TokenSinkResult<H>> {
    match name {
        "plaintext" => Some(TokenSinkResult::Plaintext),
        _ if self_closing => None,
        "script" => Some(TokenSinkResult::RawData(RawKind::ScriptData)),
        "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
            Some(TokenSinkResult::RawData(RawKind::Rawtext))
        }
        "textarea" | "title" => Some(TokenSinkResult::RawData(RawKind::Rcdata)),
        _ => None,
    }
}
