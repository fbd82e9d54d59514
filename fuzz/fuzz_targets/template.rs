//! Instruction templates: parsing never fails or panics, rendering with every placeholder set
//! never errors (artifacts aside), and without escapes in the source the rendered text holds no
//! valid placeholder left unreplaced.
#![no_main]

use agentstate::{Map, Value};
use agentstate_runtime::template::Template;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|source: &str| {
    let template = Template::parse(source);
    let placeholders: Vec<_> = template.placeholders().cloned().collect();
    if placeholders.iter().any(|p| p.artifact) {
        assert!(template.render(&Map::new(), "agent").is_err(), "{source:?}: artifacts need a store");
        return;
    }
    // Every placeholder present: rendering succeeds. "-" cannot form a name with its neighbours.
    let state: Map<String, Value> = placeholders.iter().map(|p| (p.name.clone(), Value::from("-"))).collect();
    let rendered = match template.render(&state, "agent") {
        Ok(text) => text,
        Err(e) => panic!("{source:?} with every placeholder set: {e}"),
    };
    // None present: an error exactly when a placeholder is required.
    let required = placeholders.iter().any(|p| !p.optional);
    assert_eq!(template.render(&Map::new(), "agent").is_err(), required, "{source:?}");
    // Without escapes (`{{`, `}}`, `${`, `\{`), no state placeholder survives. (An artifact's
    // name is free text, so `{artifact.x{y}}` can render as one: harmless, since rendering is a
    // single pass.)
    let escapes = ["{{", "}}", "${", "\\{"];
    if !escapes.iter().any(|e| source.contains(e)) {
        let left = Template::parse(&rendered).placeholders().filter(|p| !p.artifact).count();
        assert_eq!(left, 0, "{source:?} rendered as {rendered:?} still has a placeholder");
    }
});
