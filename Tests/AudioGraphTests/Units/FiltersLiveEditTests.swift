// Tests, Units: every filters-track unit rendering while another thread edits and schedules its parameters (run under ThreadSanitizer by scripts/test).
import Foundation
import Synchronization
import Testing
import AudioGraph
import AudioGraphTestSupport

@Suite("Filters track: live edits from another thread")
struct FiltersLiveEditTests {
    @Test func everyUnitRendersWhileAnotherThreadEditsIt() throws {
        let units: [AudioUnit] = [HighPassFilterUnit(), BandPassFilterUnit(), LowShelfFilterUnit(), HighShelfFilterUnit(),
                                  ParametricEQUnit(), NotchFilterUnit(), AllPassFilterUnit(), NBandEQUnit(bands: 5),
                                  DelayUnit(), SampleDelayUnit(), LowPassFilterUnit()]
        let chain = try Chain(units)
        let running = Atomic<Bool>(true)
        let edits = Atomic<Int>(0)
        // The editor: every parameter of every unit, set, stepped, ramped, anywhere in its range.
        let editor = Thread {
            var i = 0
            while running.load(ordering: .relaxed) {
                let unit = units[i % units.count]
                let infos = unit.parameterList(scope: .global)
                let info = infos[(i / units.count) % infos.count]
                let value = info.minValue + (info.maxValue - info.minValue) * Float(i % 11) / 10
                switch i % 3 {
                case 0: try? unit.setParameter(info.id, value, scope: .global)
                case 1: try? unit.setParameter(info.id, value, scope: .global, bufferOffset: i % 300)
                default:
                    if info.unit != .boolean && info.unit != .indexed {
                        try? unit.scheduleParameter(AudioUnitParameterEvent(id: info.id, scope: .global, bufferOffset: i % 500,
                                                                            .linearRamp(to: value, durationFrames: 1 + i % 2000)))
                    }
                }
                _ = try? unit.parameter(info.id, scope: .global)
                edits.add(1, ordering: .relaxed)
                i += 1
                usleep(50)
            }
        }
        editor.start()
        var finite = true
        for block in 0..<40 {
            let out = try chain.render([noise(frames: 2400, seed: UInt64(2 * block)), noise(frames: 2400, seed: UInt64(2 * block + 1))], slice: 256)
            finite = finite && out.allSatisfy { $0.allSatisfy(\.isFinite) }
        }
        running.store(false, ordering: .relaxed)
        while !editor.isFinished { usleep(1000) }
        #expect(finite, "every sample finite under edits at every extreme")
        #expect(edits.load(ordering: .relaxed) > 100, "\(edits.load(ordering: .relaxed)) edits while rendering")
    }
}
