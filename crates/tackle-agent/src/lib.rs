//! Registry, dispatcher, sanitizer, tool profiles and the ReAct loop
