//! `GET /openapi.json`: the OpenAPI 3.1 document, assembled from the route table
//! ([`super::ROUTES`]) and the JSON Schemas of the handlers' own request and response types
//! (schemars), so it cannot drift from what the handlers take and give.

use super::auth::scope_name;
use super::errors::ErrorBody;
use super::query::ParamKind;
use axum::Json;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};
use tackle_protocol::config::GatewayScope;
use tackle_protocol::ids::IdKind;

/// One endpoint: what it is, who may call it, and its types.
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    /// `None`: served without a token (still behind the Origin/Host guard).
    pub scope: Option<GatewayScope>,
    pub summary: &'static str,
    pub request: Option<fn(&mut SchemaGenerator) -> Schema>,
    pub response: fn(&mut SchemaGenerator) -> Schema,
    /// Also answers `text/event-stream` of these (`stream: true`).
    pub events: Option<fn(&mut SchemaGenerator) -> Schema>,
    /// The query parameters the handler reads (any other is a 400).
    pub query: &'static [super::query::Param],
    /// The media types of a 200 answer: [`JSON`] of `response`, or text (the console's files).
    pub media: &'static [&'static str],
}

pub const JSON: &[&str] = &["application/json"];
/// Only a stream of server-sent events (described by `events`).
pub const EVENTS: &[&str] = &[];

/// The schema of `T` as a `$ref` into `components/schemas`.
pub fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

pub async fn document() -> Json<Value> {
    Json(build())
}

pub fn build() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    let mut g = settings.into_generator();
    let error = schema::<ErrorBody>(&mut g);
    let mut paths = Map::new();
    for route in super::ROUTES {
        let mut content = Map::new();
        for media in route.media {
            let schema = if *media == "application/json" {
                json!((route.response)(&mut g))
            } else {
                json!({"type": "string"})
            };
            content.insert((*media).into(), json!({ "schema": schema }));
        }
        if let Some(events) = route.events {
            content.insert(
                "text/event-stream".into(),
                json!({"schema": events(&mut g)}),
            );
        }
        let mut op = json!({
            "operationId": operation_id(route),
            "summary": route.summary,
            "responses": {
                "200": {"description": "OK", "content": content},
                "default": {
                    "description": "An error: 400 bad request, 401 no or wrong token, 403 wrong scope, Origin or Host, 404 unknown agent, 409 conflict (answered already, changed meanwhile), 413 body too large, 429 rate limited, 503 an MCP server not running",
                    "content": {"application/json": {"schema": error}}
                }
            }
        });
        match route.scope {
            Some(scope) => {
                op["security"] = json!([{"bearer": []}]);
                op["x-tackle-scope"] = json!(scope_name(scope));
            }
            None => op["security"] = json!([]),
        }
        let parameters = parameters(route);
        if !parameters.is_empty() {
            op["parameters"] = Value::Array(parameters);
        }
        if let Some(request) = route.request {
            op["requestBody"] = json!({
                "required": true,
                "content": {"application/json": {"schema": request(&mut g)}}
            });
        }
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        entry[route.method.to_ascii_lowercase()] = op;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Tackle gateway",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The HTTP API `tackle daemon` serves (`gateway:` in the config). Models are agents, named `tackle:NAME`."
        },
        "paths": paths,
        "components": {
            "schemas": g.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
        }
    })
}

/// The `{name}` segments of the path (each required), then the query parameters, each with
/// the schema of what the handler accepts.
fn parameters(route: &Route) -> Vec<Value> {
    let path = route
        .path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| {
            json!({"name": name, "in": "path", "required": true, "schema": path_schema(route.path)})
        });
    let query = route.query.iter().map(|p| {
        let schema = match p.kind {
            ParamKind::Count => json!({"type": "integer", "minimum": 1}),
            ParamKind::Id(kind) => id_schema(kind),
            ParamKind::Text => json!({"type": "string", "minLength": 1}),
        };
        json!({"name": p.name, "in": "query", "required": false, "description": p.about, "schema": schema})
    });
    path.chain(query).collect()
}

/// What a route's `{id}` (or `{file}`) is, by the collection it names.
fn path_schema(path: &str) -> Value {
    if path.starts_with("/v1/sessions/") {
        id_schema(IdKind::Session)
    } else if path.starts_with("/v1/schedules/") {
        id_schema(IdKind::Schedule)
    } else if path.starts_with("/v1/approvals/") {
        json!({"type": "string", "pattern": "^[0-9a-f]{24}$"})
    } else {
        json!({"type": "string", "minLength": 1})
    }
}

fn id_schema(kind: IdKind) -> Value {
    json!({"type": "string", "pattern": tackle_protocol::ids::pattern(kind)})
}

fn operation_id(route: &Route) -> String {
    let words: Vec<&str> = route
        .path
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    format!("{}_{}", route.method.to_ascii_lowercase(), words.join("_"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_reference_resolves_to_a_component() {
        let doc = super::build();
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for part in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = part.split('"').next().unwrap();
            assert!(schemas.contains_key(name), "{name} missing");
        }
        assert!(schemas.contains_key("ChatCompletionRequest"));
    }
}
