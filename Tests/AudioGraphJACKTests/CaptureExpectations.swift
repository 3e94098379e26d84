// Tests, JACK: the expectations on what a probe captured, which tell a wrong result from a pass JACK's xruns spoiled.
import AudioGraphTestSupport
import Foundation
import Testing

/// The offset where `played` occurs in `captured` with every sample within `tolerance`, or nil.
func nearOccurrence(of played: [Float], in captured: [Float], tolerance: Float) -> Int? {
    guard let first = played.firstIndex(where: { abs($0) > 0.01 }), played.count <= captured.count else { return nil }
    for offset in 0...(captured.count - played.count) where abs(captured[offset + first] - played[first]) <= tolerance {
        if zip(played, captured[offset..<(offset + played.count)]).allSatisfy({ abs($0 - $1) <= tolerance }) { return offset }
    }
    return nil
}

extension ProbeClient {
    /// Plays the probe's buffer through the client under test (``ProbeClient/run(timeout:passes:)``)
    /// and expects `played` back bit for bit, delayed by 0…`maxDelay` frames. A mismatch fails the
    /// test with ``captureReport(_:_:_:)`` — unless every pass of the run had an xrun, which loses
    /// audio by JACK's design whatever the clients do: then it is printed as unverified, because
    /// the capture says nothing about our code.
    /// - Returns: the capture, `[frame]`.
    @discardableResult
    func expectExact(_ played: [Float], maxDelay: Int = 8192, _ comment: String,
                     sourceLocation: SourceLocation = #_sourceLocation) -> [Float] {
        let captured = run()
        judge(exactDelay(of: played, in: captured, maxDelay: maxDelay) != nil, played, captured, comment, sourceLocation)
        return captured
    }

    /// As ``expectExact(_:maxDelay:_:sourceLocation:)``, with every sample within `tolerance`
    /// of `played`, at any offset (``nearOccurrence(of:in:tolerance:)``).
    @discardableResult
    func expectNear(_ played: [Float], tolerance: Float, _ comment: String,
                    sourceLocation: SourceLocation = #_sourceLocation) -> [Float] {
        let captured = run()
        judge(nearOccurrence(of: played, in: captured, tolerance: tolerance) != nil, played, captured, comment, sourceLocation)
        return captured
    }

    private func judge(_ passed: Bool, _ played: [Float], _ captured: [Float], _ comment: String, _ sourceLocation: SourceLocation) {
        guard !passed else { return }
        let report = captureReport(played, captured, self)
        if lastPassHadXruns {
            print("unverified, every pass had an xrun: \(comment) (\(report))")
        } else {
            Issue.record(Comment(rawValue: "\(comment): \(report)"), sourceLocation: sourceLocation)
        }
    }
}

/// Runs `tool` with `options` against a server that does not exist and expects a bad option:
/// status 2 before JACK is joined (joining would have failed with status 1), exactly one
/// stderr line `tool: …` containing `message`, nothing on stdout, and none of the files named
/// under `filesUnder` (path prefixes) left behind.
func expectRefusedBeforeJoiningJACK(_ tool: String, _ options: [String], saying message: String, filesUnder prefixes: [String],
                                    sourceLocation: SourceLocation = #_sourceLocation) throws {
    let process = try ToolProcess(tool, options, server: "no-such-server-\(getpid())")
    #expect(process.waitForExit() == 2, "\(options): \(process.stderr)", sourceLocation: sourceLocation)
    #expect(process.stderr.hasPrefix("\(tool): ") && process.stderr.contains(message), "\(options): \(process.stderr)", sourceLocation: sourceLocation)
    #expect(process.stderr.split(separator: "\n").count == 1 && process.stdout.isEmpty, "\(options): \(process.stdout) \(process.stderr)",
            sourceLocation: sourceLocation)
    for file in options where prefixes.contains(where: { file.hasPrefix($0) }) {
        #expect(access(file, F_OK) != 0, "\(file) not created", sourceLocation: sourceLocation)
    }
}
