//! The tools' texts name the model's tools (`skill_list`, `schedule_list`); a person at the
//! command line is told the command that does the same instead.

/// Each tool named in hints, and the command a person types for it.
const COMMANDS: [(&str, &str); 5] = [
    ("skill_list", "`tackle skills list`"),
    ("skill_search", "`tackle skills search`"),
    ("skill_show", "`tackle skills show`"),
    ("install_skill", "`tackle skills install`"),
    ("schedule_list", "`tackle schedule list`"),
];

/// `text` with every tool name of [`COMMANDS`] (backquoted or not) replaced by its command.
pub fn for_cli(text: &str) -> String {
    COMMANDS
        .iter()
        .fold(text.to_string(), |t, (tool, command)| {
            t.replace(&format!("`{tool}`"), tool).replace(tool, command)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_become_commands_once() {
        assert_eq!(
            for_cli("no skill `x`; skill_list shows every skill, or `skill_search`"),
            "no skill `x`; `tackle skills list` shows every skill, or `tackle skills search`"
        );
        assert_eq!(for_cli("nothing to change"), "nothing to change");
    }
}
