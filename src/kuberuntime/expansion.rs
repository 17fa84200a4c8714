//! `$(VAR)` expansion in env values, command and args (upstream
//! `third_party/forked/golang/expansion`).
//!
//! Rules:
//! - `$(NAME)` is replaced by the value of `NAME` when it is known, and left
//!   as written (`$(NAME)`) when it is not;
//! - `$$` is an escaped `$`: `$$(NAME)` yields the literal `$(NAME)`;
//! - a `$` followed by anything else, an unclosed `$(`, or a trailing `$` is
//!   kept as written.

/// Expands `input` with `mapping`, which returns the value of a variable, or
/// `None` when the variable is unknown (the reference is then kept as is).
pub fn expand(input: &str, mapping: impl Fn(&str) -> Option<String>) -> String {
    let bytes = input.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.extend_from_slice(&bytes[checkpoint..cursor]);
            let rest = &bytes[cursor + 1..];
            let advance = match rest[0] {
                // Escaped operator.
                b'$' => {
                    out.push(b'$');
                    1
                }
                b'(' => match rest.iter().position(|b| *b == b')') {
                    Some(close) => {
                        // `(` and `)` are ASCII, so the name is valid UTF-8.
                        let name = String::from_utf8_lossy(&rest[1..close]);
                        match mapping(&name) {
                            Some(value) => out.extend_from_slice(value.as_bytes()),
                            None => out.extend_from_slice(format!("$({name})").as_bytes()),
                        }
                        close + 1
                    }
                    // Incomplete reference: keep "$(" and go on after it.
                    None => {
                        out.extend_from_slice(b"$(");
                        1
                    }
                },
                // Not a reference: keep the operator and the next byte.
                other => {
                    out.push(b'$');
                    out.push(other);
                    1
                }
            };
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    out.extend_from_slice(&bytes[checkpoint.min(bytes.len())..]);
    // Only whole UTF-8 sequences were copied, in order.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars() -> HashMap<&'static str, &'static str> {
        HashMap::from([
            ("VAR_A", "A"),
            ("VAR_B", "B"),
            ("VAR_C", "C"),
            ("VAR_REF", "$(VAR_A)"),
            ("VAR_EMPTY", ""),
            ("UNICODE", "héllo"),
        ])
    }

    fn x(input: &str) -> String {
        let v = vars();
        expand(input, |name| v.get(name).map(|s| s.to_string()))
    }

    /// The table from upstream's `expand_test.go` (TestMapReference / TestMapping).
    #[test]
    fn expansion_matches_upstream_cases() {
        let cases = [
            ("whole string", "$(VAR_A)", "A"),
            ("repeat", "$(VAR_A)-$(VAR_A)", "A-A"),
            ("beginning", "$(VAR_A)-1", "A-1"),
            ("middle", "___$(VAR_B)___", "___B___"),
            ("end", "___$(VAR_C)", "___C"),
            ("compound", "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
            ("escape & expansion", "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
            ("compound escape", "$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"),
            ("mixed in escapes", "f000-$$VAR_A", "f000-$VAR_A"),
            ("backslash escape ignored", "foo\\$(VAR_C)bar", "foo\\Cbar"),
            ("backslash escape ignored 2", "foo\\\\$(VAR_C)bar", "foo\\\\Cbar"),
            ("lots of backslashes", "foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"),
            ("nested var references", "$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
            (
                "nested var references second type",
                "$(VAR_A$(VAR_B)",
                "$(VAR_A$(VAR_B)",
            ),
            ("value is a reference", "$(VAR_REF)", "$(VAR_A)"),
            (
                "value is a reference x 2",
                "%%$(VAR_REF)--$(VAR_REF)%%",
                "%%$(VAR_A)--$(VAR_A)%%",
            ),
            ("empty var", "foo$(VAR_EMPTY)bar", "foobar"),
            ("unterminated expression", "foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
            ("expression without operator", "f00__(VAR_A)__", "f00__(VAR_A)__"),
            ("shell special vars pass through", "$?_boo_$!", "$?_boo_$!"),
            ("bare operators are ignored", "$VAR_A", "$VAR_A"),
            ("undefined vars are passed through", "$(VAR_DNE)", "$(VAR_DNE)"),
            (
                "multiple (even) operators, var undefined",
                "$$$$$$(BIG_MONEY)",
                "$$$(BIG_MONEY)",
            ),
            ("multiple (even) operators, var defined", "$$$$$$(VAR_A)", "$$$(VAR_A)"),
            (
                "multiple (odd) operators, var undefined",
                "$$$$$$$(GOOD_ODDS)",
                "$$$$(GOOD_ODDS)",
            ),
            ("multiple (odd) operators, var defined", "$$$$$$$(VAR_A)", "$$$A"),
            ("missing open expression", "$VAR_A)", "$VAR_A)"),
            ("shell syntax ignored", "${VAR_A}", "${VAR_A}"),
            (
                "trailing incomplete expression not consumed",
                "$(VAR_B)_______$(A",
                "B_______$(A",
            ),
            (
                "trailing incomplete expression, no content, is not consumed",
                "$(VAR_C)_______$(",
                "C_______$(",
            ),
            (
                "operator at end of input string is preserved",
                "$(VAR_A)foobarzab$",
                "Afoobarzab$",
            ),
            ("shell escaped incomplete expr", "foo-\\$(VAR_A", "foo-\\$(VAR_A"),
            ("lots of $( in middle", "--$($($($($--", "--$($($($($--"),
            ("lots of $( in beginning", "$($($($($--foo$(", "$($($($($--foo$("),
            ("lots of $( at end", "foo0--$($($($(", "foo0--$($($($("),
            (
                "escaped operators in variable names are not escaped",
                "$(foo$$var)",
                "$(foo$$var)",
            ),
            ("newline not expanded", "\n", "\n"),
            ("empty input", "", ""),
            ("lone operator", "$", "$"),
            ("multi-byte text around references", "ü$(UNICODE)ü$ü", "ühélloü$ü"),
        ];
        for (name, input, want) in cases {
            assert_eq!(x(input), want, "{name}: {input:?}");
        }
    }

    #[test]
    fn escaped_operator_before_multibyte_character_keeps_it_whole() {
        assert_eq!(x("$é"), "$é");
        assert_eq!(x("$(é)"), "$(é)");
    }
}
