//! OAuth 2.1 for Streamable HTTP servers: `tackle mcp login` / `logout` and where the tokens
//! are kept. The work (and its I/O) is in the wire layer; see [`login`].

pub use crate::wire::client::auth::{has_token, login, logout, token_path, Login, OAuthError};
