pub mod audit;
pub mod chat;
pub mod doctor;
pub mod mcp;
pub mod mcp_login;
pub mod run;
pub mod sessions;
pub mod tools;
