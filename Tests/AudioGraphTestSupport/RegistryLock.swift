// Test support: one lock for the tests that change or count AudioComponentRegistry, in any test target.
import AudioGraph

/// Held by every test that changes AudioComponentRegistry (register, addProvider, refresh, the
/// plugin providers) or counts what is in it: the registry is one per process and Swift Testing
/// runs suites of every target in parallel, so a walk and a count must not see an edit between.
package let componentRegistryTestLock = ControlLock<Void>(())
