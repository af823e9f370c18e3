//! The renames of one source as a query reads them (see [`crate::aliases`]
//! for where they come from): an old name's index term → its new names'.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::aliases::{name_like, AliasFile};
use crate::index::TermGroup;

/// The aliases of one source as a query reads them: an old name's index
/// term → the index terms of its new names.
#[derive(Debug, Clone, Default)]
pub struct AliasMap {
    /// Whole-word term of the old name → (old name as the docs write it,
    /// whole-word terms of its new names).
    by_term: BTreeMap<String, (String, Vec<String>)>,
}

impl AliasMap {
    /// Index the aliases by the terms the analyzer makes of their names.
    pub fn new(file: &AliasFile) -> AliasMap {
        let mut by_term: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
        for a in &file.aliases {
            let (Some(old), Some(new)) = (
                crate::index::terms(&a.old).into_iter().next(),
                crate::index::terms(&a.new).into_iter().next(),
            ) else {
                continue;
            };
            if old == new {
                continue;
            }
            let e = by_term
                .entry(old)
                .or_insert_with(|| (a.old.clone(), Vec::new()));
            if !e.1.contains(&new) {
                e.1.push(new);
            }
        }
        AliasMap { by_term }
    }

    /// The query's groups with the new names of every old name among them
    /// (see [`AliasMap::expand`]) in their `also`; the groups themselves,
    /// not a copy, when none is an old name (most sources declare none).
    pub fn expand_groups<'g>(&self, groups: &'g [TermGroup]) -> Cow<'g, [TermGroup]> {
        let new_of = |g: &TermGroup| {
            (!g.added && !g.corrected)
                .then(|| g.terms.first().and_then(|t| self.expand(&g.word, t)))
                .flatten()
        };
        if !groups.iter().any(|g| new_of(g).is_some()) {
            return Cow::Borrowed(groups);
        }
        let mut out = groups.to_vec();
        for g in &mut out {
            if let Some(new) = new_of(g) {
                g.also = new.to_vec();
            }
        }
        Cow::Owned(out)
    }

    /// The new names' terms for a query word, when it is an old name: an
    /// identifier-like old name (`VisualServer`, `Node3D`) in any case, a
    /// plain capitalized one (`Spatial`) only as the docs write it, since in
    /// lower case it is also an everyday word (`spatial` shaders).
    pub fn expand(&self, word: &str, term: &str) -> Option<&[String]> {
        let (old, new) = self.by_term.get(term)?;
        let capitalized = old.starts_with(|c: char| c.is_ascii_uppercase());
        (name_like(old) || (capitalized && word == old)).then_some(new.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aliases::Alias;

    #[test]
    fn a_query_word_expands_when_it_is_an_old_name() {
        let file = AliasFile {
            aliases: vec![
                Alias {
                    old: "Frame".into(),
                    new: "FrameNode".into(),
                    from: String::new(),
                },
                Alias {
                    old: "PaintServer".into(),
                    new: "DrawServer".into(),
                    from: String::new(),
                },
            ],
        };
        let map = AliasMap::new(&file);
        let term = |w: &str| crate::index::terms(w).into_iter().next().unwrap();
        let new = |w: &str| map.expand(w, &term(w)).map(|v| v.to_vec());
        assert_eq!(new("PaintServer"), Some(vec![term("DrawServer")]));
        assert_eq!(new("paintserver"), Some(vec![term("DrawServer")]));
        assert_eq!(new("Frame"), Some(vec![term("FrameNode")]));
        // "frame" in lower case is an everyday word, not the old class.
        assert_eq!(new("frame"), None);
        assert_eq!(new("DrawServer"), None);
    }
}
