//! Tackle's built-in tool extensions
