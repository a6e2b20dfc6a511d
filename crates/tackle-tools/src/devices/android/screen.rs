//! A `uiautomator dump` made small: the elements a model can act on, their centres and what
//! acting on them means, and alerts when the model seems to go round in circles.

use serde::Serialize;
use serde_json::{json, Value};
use std::collections::VecDeque;

/// At most this many elements are returned: the rest of a dump is rarely worth its tokens.
pub(crate) const MAX_ELEMENTS: usize = 30;
/// Elements whose centres lie this close (on both axes) are one thing on screen.
const MERGE_PX: i64 = 5;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Element {
    pub text: String,
    pub center: [i64; 2],
    pub action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    pub flags: Vec<&'static str>,
}

/// The screen from a dump's XML: the foreground package and its elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Screen {
    pub package: Option<String>,
    pub elements: Vec<Element>,
}

/// Why a dump could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum DumpError {
    #[error("the screen dump holds no <hierarchy> element")]
    NoHierarchy,
    #[error("the screen dump is not well-formed XML: {0}")]
    Xml(String),
}

/// The XML part of what `uiautomator dump /dev/tty` prints (it adds a line of its own after).
pub(crate) fn xml_part(output: &str) -> Option<&str> {
    let start = output.find("<hierarchy")?;
    let end = output.rfind("</hierarchy>")? + "</hierarchy>".len();
    output.get(start..end)
}

pub(crate) fn parse(output: &str) -> Result<Screen, DumpError> {
    let xml = xml_part(output).ok_or(DumpError::NoHierarchy)?;
    let doc = roxmltree::Document::parse(xml).map_err(|e| DumpError::Xml(e.to_string()))?;
    let nodes = doc.descendants().filter(|n| n.has_tag_name("node"));
    let mut package = None;
    let mut elements: Vec<Element> = Vec::new();
    for node in nodes {
        if package.is_none() {
            package = node
                .attribute("package")
                .filter(|p| !p.is_empty())
                .map(str::to_string);
        }
        let Some(el) = element(&node) else { continue };
        if let Some(near) = elements.iter_mut().find(|e| {
            (e.center[0] - el.center[0]).abs() <= MERGE_PX
                && (e.center[1] - el.center[1]).abs() <= MERGE_PX
        }) {
            merge(near, el);
        } else {
            elements.push(el);
        }
    }
    elements.truncate(MAX_ELEMENTS);
    Ok(Screen { package, elements })
}

fn merge(into: &mut Element, other: Element) {
    if into.text.is_empty() {
        into.text = other.text;
    } else if !other.text.is_empty() && !into.text.contains(&other.text) {
        into.text = format!("{} / {}", into.text, other.text);
    }
    // A container that is tapped and the label inside it: tapping wins over reading.
    if into.action == "read" {
        into.action = other.action;
    }
    into.class = into.class.take().or(other.class);
    into.id = into.id.take().or(other.id);
    into.hint = into.hint.take().or(other.hint);
    for f in other.flags {
        if !into.flags.contains(&f) {
            into.flags.push(f);
        }
    }
}

fn element(node: &roxmltree::Node) -> Option<Element> {
    let attr = |k: &str| node.attribute(k).unwrap_or_default();
    let yes = |k: &str| attr(k) == "true";
    let (left, top, right, bottom) = bounds(attr("bounds"))?;
    if right <= left || bottom <= top {
        return None;
    }
    let text = [attr("text"), attr("content-desc")]
        .into_iter()
        .find(|t| !t.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .to_string();
    let class = attr("class");
    let editable = class.ends_with("EditText");
    let action = if editable {
        "type"
    } else if yes("scrollable") {
        "scroll"
    } else if yes("clickable") || yes("checkable") {
        "tap"
    } else if yes("long-clickable") {
        "long_press"
    } else {
        "read"
    };
    if text.is_empty() && action == "read" {
        return None;
    }
    let mut flags = Vec::new();
    for (attr_name, flag) in [
        ("checked", "checked"),
        ("selected", "selected"),
        ("focused", "focused"),
        ("password", "password"),
    ] {
        if yes(attr_name) {
            flags.push(flag);
        }
    }
    if attr("enabled") == "false" {
        flags.push("disabled");
    }
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Some(Element {
        text,
        center: [(left + right) / 2, (top + bottom) / 2],
        action,
        class: non_empty(class.rsplit('.').next().unwrap_or(class)),
        id: non_empty(
            attr("resource-id")
                .rsplit(":id/")
                .next()
                .unwrap_or_default(),
        ),
        hint: non_empty(attr("hint")),
        flags,
    })
}

/// `[left,top][right,bottom]`.
fn bounds(s: &str) -> Option<(i64, i64, i64, i64)> {
    let s = s.strip_prefix('[')?.strip_suffix(']')?;
    let (a, b) = s.split_once("][")?;
    let pair = |p: &str| -> Option<(i64, i64)> {
        let (x, y) = p.split_once(',')?;
        Some((x.trim().parse().ok()?, y.trim().parse().ok()?))
    };
    let (l, t) = pair(a)?;
    let (r, b) = pair(b)?;
    Some((l, t, r, b))
}

/// `wm size`: `Physical size: 1080x2400`, and `Override size: …` when one is set (it wins).
pub(crate) fn screen_size(output: &str) -> Option<[i64; 2]> {
    let parse = |line: &str| -> Option<[i64; 2]> {
        let (_, size) = line.split_once(':')?;
        let (w, h) = size.trim().split_once('x')?;
        Some([w.trim().parse().ok()?, h.trim().parse().ok()?])
    };
    let lines: Vec<&str> = output.lines().collect();
    lines
        .iter()
        .find(|l| l.trim_start().starts_with("Override size"))
        .or_else(|| {
            lines
                .iter()
                .find(|l| l.trim_start().starts_with("Physical size"))
        })
        .and_then(|l| parse(l))
}

/// What the model did lately, to warn it when it repeats itself.
#[derive(Debug, Default)]
pub(crate) struct History {
    recent: VecDeque<String>,
}

const HISTORY: usize = 8;
const NAV_KEYS: &[&str] = &["back", "home", "recent"];

impl History {
    pub fn record(&mut self, action: String) {
        if self.recent.len() == HISTORY {
            self.recent.pop_front();
        }
        self.recent.push_back(action);
    }

    /// Alerts for the screen result: one action 3 times among the last 8, or 4 navigation
    /// presses among the last 5.
    pub fn alerts(&self) -> Vec<String> {
        let mut alerts = Vec::new();
        let mut seen: Vec<&String> = Vec::new();
        for a in &self.recent {
            if seen.contains(&a) {
                continue;
            }
            seen.push(a);
            let n = self.recent.iter().filter(|b| *b == a).count();
            if n >= 3 {
                alerts.push(format!(
                    "`{a}` was done {n} times in the last {} actions; the screen may not be reacting — try something else",
                    self.recent.len()
                ));
            }
        }
        let nav = self
            .recent
            .iter()
            .rev()
            .take(5)
            .filter(|a| NAV_KEYS.contains(&a.as_str()))
            .count();
        if nav >= 4 {
            alerts.push(format!(
                "{nav} of the last 5 actions were back/home/recent presses; look at the screen before navigating again"
            ));
        }
        alerts
    }
}

/// The screen result the model sees.
pub(crate) fn render(screen: Screen, size: Option<[i64; 2]>, alerts: Vec<String>) -> Value {
    let mut out = json!({
        "package": screen.package,
        "screen_size": size,
        "elements": screen.elements,
    });
    if !alerts.is_empty() {
        out["alerts"] = json!(alerts);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const DUMP: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.example.app" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][1080,2400]"><node index="0" text="Sign in" resource-id="com.example.app:id/sign_in" class="android.widget.Button" package="com.example.app" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[100,200][300,260]"><node index="0" text="Sign in" class="android.widget.TextView" package="com.example.app" clickable="false" bounds="[102,202][298,258]" /></node><node index="1" text="" hint="Email" resource-id="com.example.app:id/email" class="android.widget.EditText" package="com.example.app" content-desc="" clickable="true" focused="true" enabled="true" bounds="[0,400][1080,500]" /><node index="2" text="Tom &amp; Jerry" class="android.widget.TextView" package="com.example.app" enabled="false" bounds="[0,600][1080,700]" /><node index="3" text="" class="android.view.View" package="com.example.app" bounds="[0,800][1080,900]" /></node></hierarchy>UI hierchary dumped to: /dev/tty"#;

    #[test]
    fn a_dump_becomes_a_few_actionable_elements() {
        let screen = parse(DUMP).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(screen.package.as_deref(), Some("com.example.app"));
        let v = serde_json::to_value(&screen.elements).unwrap_or_default();
        assert_eq!(
            v,
            json!([
                {"text": "Sign in", "center": [200, 230], "action": "tap", "class": "Button", "id": "sign_in", "flags": []},
                {"text": "", "center": [540, 450], "action": "type", "class": "EditText", "id": "email", "hint": "Email", "flags": ["focused"]},
                {"text": "Tom & Jerry", "center": [540, 650], "action": "read", "class": "TextView", "flags": ["disabled"]}
            ])
        );
    }

    #[test]
    fn broken_dumps_are_errors_not_panics() {
        for bad in [
            "",
            "ERROR: null root node returned by UiTestAutomationBridge.",
            "<hierarchy><node",
            "</hierarchy><hierarchy>",
            "<hierarchy><node bounds=\"[a,b][c,d]\"/></hierarchy>",
        ] {
            let _ = parse(bad);
        }
        assert_eq!(parse("nothing"), Err(DumpError::NoHierarchy));
    }

    #[test]
    fn many_elements_are_capped() {
        let nodes: String = (0..100)
            .map(|i| {
                format!(
                    r#"<node text="t{i}" bounds="[0,{}][10,{}]"/>"#,
                    i * 20,
                    i * 20 + 10
                )
            })
            .collect();
        let screen =
            parse(&format!("<hierarchy>{nodes}</hierarchy>")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(screen.elements.len(), MAX_ELEMENTS);
    }

    #[test]
    fn wm_size_prefers_the_override() {
        assert_eq!(
            screen_size("Physical size: 1080x2400\n"),
            Some([1080, 2400])
        );
        assert_eq!(
            screen_size("Physical size: 1080x2400\nOverride size: 720x1600\n"),
            Some([720, 1600])
        );
        assert_eq!(screen_size("garbage"), None);
    }

    #[test]
    fn repeats_and_navigation_loops_raise_alerts() {
        let mut h = History::default();
        for a in ["tap 1,1", "type x", "tap 1,1", "swipe", "tap 1,1"] {
            h.record(a.to_string());
        }
        let alerts = h.alerts();
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        assert!(alerts[0].contains("`tap 1,1` was done 3 times"));
        let mut h = History::default();
        for a in ["back", "home", "tap 2,2", "back", "recent"] {
            h.record(a.to_string());
        }
        assert!(h.alerts().iter().any(|a| a.contains("4 of the last 5")));
        let mut h = History::default();
        for a in ["back", "tap", "home", "type"] {
            h.record(a.to_string());
        }
        assert!(h.alerts().is_empty());
    }
}
