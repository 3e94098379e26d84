// Tests: a server graphthru starts (--start-server, a child jackd) never outlives graphthru, even one killed with SIGKILL.
import AudioGraphJACK
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    /// The child jackd behind `JACKServer` dies with its parent, however the parent dies: jack2
    /// allows 8 servers per machine, and a leaked one keeps its registry entry.
    @Suite("a started server dies with its parent")
    struct StartedServerLifetimeTests {
        let server = TestServer.shared

        /// The process ids of every live `jackd` whose command line names the server `name`
        /// (`-n NAME`), read from /proc/*/cmdline. A zombie's command line is empty: it does
        /// not count (it runs nothing and holds no server).
        static func jackdProcesses(named name: String) -> [Int32] {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap { entry -> Int32? in
                guard let pid = Int32(entry),
                      let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
                let words = data.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
                guard let program = words.first, program == "jackd" || program.hasSuffix("/jackd") else { return nil }
                let named = zip(words, words.dropFirst()).contains { ($0 == "-n" || $0 == "--name") && $1 == name }
                return named ? pid : nil
            }
        }

        @Test func aSIGKILLedGraphthruLeavesNoJackdBehind() throws {
            let own = "audiograph-orphan-\(getpid())"
            let tool = try ToolProcess(["--name", "gt-orphan", "--start-server", "--server", own, "--no-autoconnect"], server: server)
            try #require(tool.waitFor("mute: off"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            try #require(JACKServer.isRunning(own), "graphthru's server answers")
            let running = Self.jackdProcesses(named: own)
            try #require(running.count == 1, "one jackd -n \(own) while graphthru runs, found \(running)")
            // Whatever happens below, no server of this test stays behind.
            defer { for pid in Self.jackdProcesses(named: own) { kill(pid, SIGTERM) } }

            // SIGKILL: no handler, no atexit, no stop(). Only the watchdog, told by the kernel, can
            // stop jackd now.
            kill(tool.process.processIdentifier, SIGKILL)
            tool.process.waitUntilExit()
            #expect(tool.process.terminationReason == .uncaughtSignal && tool.process.terminationStatus == SIGKILL)

            // Watched from /proc rather than by probing: a probe client opening while jackd shuts
            // down would leave its semaphore file behind.
            var left = running
            let deadline = Date().addingTimeInterval(5)
            while !left.isEmpty && Date() < deadline {
                usleep(50_000)
                left = Self.jackdProcesses(named: own)
            }
            #expect(left.isEmpty, "jackd -n \(own) still runs 5 s after graphthru was killed: pid \(left)")
            #expect(!JACKServer.isRunning(own), "the server '\(own)' still answers after graphthru was killed")
            // And it stopped cleanly rather than dying mid-shutdown: jack2's registry of 8 servers
            // (entries "jack-UID:NAME:") no longer holds its entry.
            let registry = FileManager.default.contents(atPath: "/dev/shm/jack-shm-registry").map { String(decoding: $0, as: UTF8.self) } ?? ""
            let listed = registry.contains(":\(own):")
            #expect(!listed, "jackd -n \(own) left its entry in /dev/shm/jack-shm-registry")
        }
    }
}
