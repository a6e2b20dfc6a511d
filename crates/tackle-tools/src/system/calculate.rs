use async_trait::async_trait;
use exmex::prelude::*;
use exmex::{FloatOpsFactory, MakeOperators, Operator};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tackle_protocol::{ToolContext, ToolError, ToolOutput, ToolSpec};

/// Expressions longer than this are refused before parsing.
pub const MAX_EXPRESSION_LEN: usize = 1_000;

/// `calculate`: floating-point arithmetic like the seed's `meval` (`7/2` = 3.5), on `exmex`.
pub struct Calculate;

// Arguments of `calculate` (a plain comment, so not sent as the schema's description).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The expression, e.g. "2 * pi * 6371".
    #[schemars(length(min = 1, max = MAX_EXPRESSION_LEN))]
    expression: String,
}

/// Why an expression cannot be evaluated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalcError {
    /// Nothing to evaluate.
    #[error("the expression is empty")]
    Empty,
    /// Longer (in characters) than the accepted maximum.
    #[error("the expression is {0} characters long; at most {MAX_EXPRESSION_LEN} are accepted")]
    TooLong(usize),
    /// A name that is not a known constant or function.
    #[error("unknown name `{0}`; known constants are pi and e, functions are sqrt, abs, exp, ln, log (base 10), log2, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, floor, ceil, round, trunc, min(a, b), max(a, b), atan2(y, x)")]
    UnknownName(String),
    /// The expression does not parse.
    #[error("cannot parse the expression: {0}")]
    Syntax(String),
    /// The result is infinite or NaN.
    #[error("the result is not a finite number ({0})")]
    NotFinite(f64),
}

/// The default float operators, with `log` meaning base 10 (as on a calculator; `ln` is the
/// natural log) and lower-case `pi` as the seed's meval accepts it.
#[derive(Clone, Debug)]
struct CalcOps;

impl MakeOperators<f64> for CalcOps {
    fn make<'a>() -> Vec<Operator<'a, f64>> {
        let mut ops: Vec<Operator<'a, f64>> = FloatOpsFactory::<f64>::make()
            .into_iter()
            .filter(|op| op.repr() != "log")
            .collect();
        ops.push(Operator::make_unary("log", |a| a.log10()));
        ops.push(Operator::make_constant("pi", std::f64::consts::PI));
        ops
    }
}

/// Evaluate an expression to a finite `f64`.
pub fn evaluate(expression: &str) -> Result<f64, CalcError> {
    let expr = expression.trim();
    if expr.is_empty() {
        return Err(CalcError::Empty);
    }
    let len = expr.chars().count();
    if len > MAX_EXPRESSION_LEN {
        return Err(CalcError::TooLong(len));
    }
    let flat = FlatEx::<f64, CalcOps>::parse(expr).map_err(|e| CalcError::Syntax(e.to_string()))?;
    // exmex treats unknown identifiers as variables; a calculator has none.
    if let Some(name) = flat.var_names().first() {
        return Err(CalcError::UnknownName(name.clone()));
    }
    let value = flat
        .eval(&[])
        .map_err(|e| CalcError::Syntax(e.to_string()))?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(CalcError::NotFinite(value))
    }
}

#[async_trait]
impl tackle_protocol::Tool for Calculate {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "calculate",
            "Evaluates a mathematical expression with floating-point arithmetic (7/2 = 3.5). Operators + - * / ^ and parentheses; constants pi, e; functions sqrt, abs, exp, ln, log (base 10), log2, sin, cos, tan, asin, acos, atan, floor, ceil, round, min(a, b), max(a, b).",
            super::NAME,
        )
        .parameters(crate::args::schema::<Args>())
    }

    async fn call(&self, args: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let value = evaluate(&args.expression).map_err(|e| match e {
            CalcError::NotFinite(_) => ToolError::failed(e.to_string()),
            _ => ToolError::invalid_arguments(e.to_string()),
        })?;
        Ok(ToolOutput::text(format_number(value)).with_structured(json!({"result": value})))
    }
}

/// Integers print without a fractional part; other values with Rust's shortest round-trip form.
fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(expr: &str, want: f64) {
        let got = evaluate(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert!((got - want).abs() < 1e-9, "{expr} = {got}, want {want}");
    }

    #[test]
    fn division_is_floating_point() {
        close("7/2", 3.5);
    }

    #[test]
    fn seed_example_evaluates() {
        close("2 * pi * 6371", 40_030.173_592_041_14);
    }

    #[test]
    fn power_constants_and_functions_work() {
        close("2^10", 1024.0);
        close("e", std::f64::consts::E);
        close("sqrt(16) + abs(-3)", 7.0);
        close("exp(0) + ln(e)", 2.0);
        close("log(1000)", 3.0);
        close("sin(0) + cos(0) + tan(0)", 1.0);
        close("asin(1)", std::f64::consts::FRAC_PI_2);
        close("floor(2.7) + ceil(2.1) + round(2.5)", 8.0);
        close("min(3, 4) + max(3, 4)", 7.0);
    }

    #[test]
    fn unknown_names_are_reported_by_name() {
        assert_eq!(
            evaluate("2 * foo"),
            Err(CalcError::UnknownName("foo".into()))
        );
    }

    #[test]
    fn syntax_errors_are_clear_errors_not_panics() {
        for bad in ["2 +", "(1", "1 2 +", ")", "sqrt(", "*"] {
            assert!(evaluate(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn overlong_and_empty_input_is_refused() {
        assert!(matches!(
            evaluate(&"1+".repeat(600)),
            Err(CalcError::TooLong(_))
        ));
        assert_eq!(evaluate("  "), Err(CalcError::Empty));
    }

    #[test]
    fn division_by_zero_is_not_a_number_result() {
        assert!(matches!(evaluate("1/0"), Err(CalcError::NotFinite(_))));
    }

    #[test]
    fn integers_print_without_fraction() {
        assert_eq!(format_number(3.0), "3");
        assert_eq!(format_number(3.5), "3.5");
    }
}
