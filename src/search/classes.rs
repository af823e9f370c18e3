//! The structured class reference of a Godot artifact, with its lookups.
//!
//! An artifact's `classes.jsonl` is verified with everything else when the
//! artifact is opened, but parsed only when a tool first needs it: it is the
//! second-largest record file of the largest artifact, and a server that
//! answers agent-docs questions first should not wait for it. The verified
//! bytes are what is parsed, so nothing unverified is ever read.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::LazyLock;

use super::ToolError;
use crate::normalize::godot_class::GodotClass;
use crate::util::canonical_page_key;

/// Every class of a reference and the lookups the tools use.
#[derive(Debug, Default)]
pub struct ClassReference {
    pub classes: Vec<GodotClass>,
    by_name: HashMap<String, usize>,
    by_url: HashMap<String, usize>,
    /// Member (and enum) anchor → member name, over every class.
    pub member_by_anchor: HashMap<String, String>,
    /// Anchors of the members the docs mark deprecated.
    pub deprecated_members: HashSet<String>,
}

impl ClassReference {
    /// Index `classes` by lower-case name, page URL and member anchor.
    pub fn new(classes: Vec<GodotClass>) -> Self {
        let by_name = classes
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.to_lowercase(), i))
            .collect();
        let by_url = classes
            .iter()
            .enumerate()
            .map(|(i, c)| (canonical_page_key(&c.url), i))
            .collect();
        let mut member_by_anchor = HashMap::new();
        for c in &classes {
            let members = c.members().map(|m| (&m.anchor, &m.name));
            let enums = c.enums.iter().map(|e| (&e.anchor, &e.name));
            // A member a class only overrides has no entry (and no anchor)
            // of its own on the page; an empty anchor names no member.
            for (anchor, name) in members.chain(enums).filter(|(a, _)| !a.is_empty()) {
                member_by_anchor
                    .entry(anchor.clone())
                    .or_insert_with(|| name.clone());
            }
        }
        let deprecated_members = classes
            .iter()
            .flat_map(|c| c.members())
            .filter(|m| m.is_deprecated() && !m.anchor.is_empty())
            .map(|m| m.anchor.clone())
            .collect();
        ClassReference {
            classes,
            by_name,
            by_url,
            member_by_anchor,
            deprecated_members,
        }
    }

    /// The class whose page is `url`.
    pub fn for_url(&self, url: &str) -> Option<&GodotClass> {
        self.by_url
            .get(&canonical_page_key(url))
            .map(|&i| &self.classes[i])
    }

    /// The class named `name` (case-insensitive).
    pub fn class(&self, name: &str) -> Option<&GodotClass> {
        self.by_name
            .get(&name.trim().to_lowercase())
            .map(|&i| &self.classes[i])
    }
}

/// How a [`LazyClasses`] makes its reference, run once on first use.
type MakeReference = Box<dyn FnOnce() -> Result<ClassReference, String> + Send>;

/// A class reference parsed on first use (see the module comment).
#[derive(Debug)]
pub struct LazyClasses {
    /// The file it is parsed from (empty when it was ready), named in errors.
    path: PathBuf,
    /// The reference, or why its file does not parse (without the path).
    parsed: LazyLock<Result<ClassReference, String>, MakeReference>,
}

impl Default for LazyClasses {
    /// No class reference (a source without class pages).
    fn default() -> Self {
        LazyClasses::ready(ClassReference::default())
    }
}

impl LazyClasses {
    /// A reference already parsed (or empty: no class pages).
    pub fn ready(reference: ClassReference) -> Self {
        LazyClasses {
            path: PathBuf::new(),
            parsed: LazyLock::new(Box::new(move || Ok(reference))),
        }
    }

    /// A reference to parse from `bytes` (verified against the manifest)
    /// when first asked for.
    pub fn pending(path: PathBuf, bytes: Vec<u8>) -> Self {
        let named = path.clone();
        LazyClasses {
            path,
            parsed: LazyLock::new(Box::new(move || {
                crate::artifact::parse_jsonl_bytes(&named, &bytes)
                    .map(ClassReference::new)
                    .map_err(|e| match e {
                        crate::artifact::ArtifactError::Corrupt { message, .. } => message,
                        other => other.to_string(),
                    })
            })),
        }
    }

    /// The reference, parsed now if it was not yet. Bytes that passed their
    /// sha256 but do not parse can only come from a defect of the writer;
    /// that is reported to the caller each time, never taken for "no
    /// classes".
    pub fn get(&self) -> Result<&ClassReference, ToolError> {
        self.parsed()
            .map_err(|e| ToolError::Internal(format!("the class reference: {e}")))
    }

    /// [`LazyClasses::get`] as the artifact's error, which names the file once.
    pub fn parsed(&self) -> Result<&ClassReference, crate::artifact::ArtifactError> {
        LazyLock::force(&self.parsed).as_ref().map_err(|message| {
            crate::artifact::ArtifactError::Corrupt {
                path: self.path.clone(),
                message: message.clone(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_reference_parses_once_and_a_bad_one_stays_an_error() {
        let class = GodotClass {
            name: "Node".into(),
            url: "https://d.example/classes/class_node.html".into(),
            ..Default::default()
        };
        let line = serde_json::to_vec(&class).unwrap();
        let lazy = LazyClasses::pending(PathBuf::from("classes.jsonl"), line);
        let r = lazy.get().expect("parses");
        assert_eq!(r.class("node").map(|c| c.name.as_str()), Some("Node"));
        assert!(r
            .for_url("https://d.example/classes/class_node.html")
            .is_some());
        assert!(std::ptr::eq(r, lazy.get().unwrap()), "parsed once");

        let bad = LazyClasses::pending(PathBuf::from("classes.jsonl"), b"{not json".to_vec());
        for _ in 0..2 {
            let e = bad
                .get()
                .expect_err("a record that does not parse is an error");
            assert!(e.to_string().contains("classes.jsonl"), "{e}");
        }
        assert!(LazyClasses::default().get().unwrap().classes.is_empty());
    }

    /// A property a class only overrides (listed in its table, described on
    /// the parent's page) has no anchor: it must not name the lead section
    /// of every page, whose anchor is empty too.
    #[test]
    fn members_without_an_anchor_name_no_section() {
        use crate::normalize::godot_class::{Member, MemberKind};
        let member =
            |name: &str, anchor: &str| Member::for_test(MemberKind::Property, name, anchor);
        let r = ClassReference::new(vec![GodotClass {
            name: "AcceptDialog".into(),
            properties: vec![
                member("exclusive", ""),
                member(
                    "ok_button_text",
                    "class-acceptdialog-property-ok-button-text",
                ),
            ],
            ..Default::default()
        }]);
        assert_eq!(r.member_by_anchor.get(""), None);
        assert_eq!(
            r.member_by_anchor
                .get("class-acceptdialog-property-ok-button-text")
                .map(String::as_str),
            Some("ok_button_text")
        );
    }
}
