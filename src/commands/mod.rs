pub mod audit;
pub mod chat;
pub mod doctor;
pub mod mcp;
pub mod run;
pub mod sessions;
pub mod tools;
