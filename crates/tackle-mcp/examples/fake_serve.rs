//! `tackle mcp serve` over stdio with a stand-in dispatcher, for the Python SDK client tests
//! and the round-trip benchmark (`tests/mcp_client/client.py`).

#[path = "../tests/common/fake_service.rs"]
mod fake_service;

use std::sync::Arc;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), tackle_mcp::McpError> {
    tackle_mcp::serve_stdio(Arc::new(fake_service::FakeService)).await
}
