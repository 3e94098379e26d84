// Tests: the suite every JACK test belongs to (its helpers are in AudioGraphTestSupport).
import Testing

/// Every test that runs a JACK client. Serialized as a whole: on a 2-core machine, clients of
/// several servers running at once starve each other into xruns.
@Suite(.serialized) struct JACKIntegration {}
