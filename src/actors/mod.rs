//! The actors of actlet. Each actor owns one piece of state and is a thin
//! shell around pure logic kept in plain modules.

pub mod supervisor;
