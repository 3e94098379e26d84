// Tests: the tools' end-of-recording report (ToolSupport) — xrun times each said once, with a count.
import Testing
import ToolSupport

/// The xrun line's times: jack2 may report one xrun several times at the same graph time;
/// the report says each time once, with how often, in the order first reported.
@Suite("Recording report")
struct RecordingReportTests {
    @Test func repeatedXrunTimesAreSaidOnceWithACount() {
        #expect(xrunTimesText([146_432, 146_432, 150_528, 146_432, 200_704]) == "146432 (×3), 150528, 200704")
        #expect(xrunTimesText([1_024]) == "1024")
        #expect(xrunTimesText([UInt64]()) == "")
    }
}
