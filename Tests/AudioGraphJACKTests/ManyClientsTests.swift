// Tests, JACK: 32 graphthru instances on one server — unique names, all ports present, clean exits.
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    @Suite("many graphthru clients on one server")
    struct ManyClientsTests {
        static let count = 32

        /// The server's ports, by `jack_lsp`.
        static func ports(_ server: String) throws -> [String] {
            try run("/usr/bin/jack_lsp", [], server: server).split(separator: "\n").map(String.init)
        }

        @Test func thirtyTwoGraphthrusGetUniqueNamesAllTheirPortsAndExitCleanly() throws {
            // A server of its own: what is left on it at the end is what these 32 left.
            let own = try PrivateServer(name: "audiograph-many-\(getpid())")
            defer { own.stop() }
            // All with the default name, "graphthru": JACK gives each a unique one.
            var tools: [ToolProcess] = []
            for _ in 0..<Self.count { tools.append(try ToolProcess([], server: own.name)) }
            var names: [String] = []
            for (i, tool) in tools.enumerated() {
                #expect(tool.waitFor("mute: off", timeout: 30), "instance \(i): stdout \(tool.stdout) stderr \(tool.stderr)")
                // "graphthru: client 'graphthru-03' on JACK server …"
                let line = tool.stdout.split(separator: "\n").first { $0.hasPrefix("graphthru: client '") }
                let name = line.flatMap { $0.split(separator: "'").dropFirst().first.map(String.init) }
                #expect(name != nil, "instance \(i) names its client: \(tool.stdout)")
                if let name { names.append(name) }
            }
            #expect(names.count == Self.count)
            #expect(Set(names).count == Self.count, "unique names: \(names.sorted())")
            #expect(names.allSatisfy { $0.hasPrefix("graphthru") }, "\(names)")
            let listed = Set(try Self.ports(own.name))
            for name in names {
                for port in ["in_1", "in_2", "out_1", "out_2"] {
                    #expect(listed.contains("\(name):\(port)"), "\(name):\(port) registered: \(listed.sorted())")
                }
            }
            // Half quit by "q" on standard input, half by SIGINT: each exits 0. One after the
            // other: 32 closes at once wedged jackd 1.9.21 in its metadata database (Berkeley DB
            // in /dev/shm/jack_db-UID, shared by every server on the machine), and a jackd killed
            // then leaves its lock held for all of them.
            for (i, tool) in tools.enumerated() {
                if i % 2 == 0 { tool.send("q") } else { kill(tool.process.processIdentifier, SIGINT) }
                #expect(tool.waitForExit(timeout: 30) == 0, "instance \(i) (\(i % 2 == 0 ? "q" : "SIGINT")) exit status; stderr: \(tool.stderr)")
                #expect(tool.stdout.contains("graphthru: stopped"), "instance \(i): \(tool.stdout)")
            }
            // No client left behind: the server's own ports only.
            let left = try Self.ports(own.name).filter { !$0.hasPrefix("system:") }
            #expect(left.isEmpty, "ports left after every graphthru quit: \(left)")
        }
    }
}
