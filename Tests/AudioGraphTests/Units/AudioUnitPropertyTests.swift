// Tests, Units: unit properties, scopes and elements.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

@Suite("Unit properties, scopes and elements")
struct AudioUnitPropertyTests {
    let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
    let mono = try! StreamFormat.float32(sampleRate: 48_000, channels: 1)

    @Test func wrongScopeAndElementGiveExactCodes() throws {
        let gate = MuteGateUnit()
        #expect(throws: AudioUnitError.invalidScope) { try gate.streamFormat(scope: .global, element: 0) }
        #expect(throws: AudioUnitError.invalidElement) { try gate.streamFormat(scope: .input, element: 1) }
        #expect(throws: AudioUnitError.invalidElement) { try gate.setStreamFormat(stereo, scope: .output, element: 7) }
        #expect(throws: AudioUnitError.invalidScope) { try gate.getProperty(.maximumFramesPerSlice, scope: .input, element: 0) }
        #expect(throws: AudioUnitError.invalidElement) { try gate.getProperty(.maximumFramesPerSlice, scope: .global, element: 1) }
        #expect(throws: AudioUnitError.invalidProperty) { try gate.getProperty(.enableIO, scope: .input, element: 1) }
        #expect(throws: AudioUnitError.invalidProperty) { try gate.getProperty(AudioUnitPropertyID(rawValue: 9999), scope: .global, element: 0) }
        #expect(throws: AudioUnitError.invalidScope) { try gate.setProperty(.setRenderCallback, scope: .output, element: 0, .renderCallback(nil)) }
    }

    @Test func elementCountsPerScope() throws {
        let io = IOUnit(), mixer = MultichannelMixerUnit(inputs: 3), filter = LowPassFilterUnit()
        #expect(io.elementCount(.input) == 2 && io.elementCount(.output) == 2 && io.elementCount(.global) == 1)
        #expect(mixer.elementCount(.input) == 3 && mixer.elementCount(.output) == 1)
        guard case .uint32(let n) = try mixer.getProperty(.elementCount, scope: .input, element: 0) else { Issue.record("kind"); return }
        #expect(n == 3)
        try mixer.setProperty(.elementCount, scope: .input, element: 0, .uint32(5))
        #expect(mixer.elementCount(.input) == 5)
        #expect(throws: AudioUnitError.propertyNotWritable) { try filter.setProperty(.elementCount, scope: .input, element: 0, .uint32(2)) }
        #expect(throws: AudioUnitError.propertyNotWritable) { try mixer.setProperty(.elementCount, scope: .output, element: 0, .uint32(2)) }
    }

    @Test func elementCountKeepsParameterValues() throws {
        let mixer = MultichannelMixerUnit(inputs: 2)
        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0.25, scope: .input, element: 1)
        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0.75, scope: .output, element: 0)
        try mixer.setProperty(.elementCount, scope: .input, element: 0, .uint32(4))
        #expect(try mixer.parameter(MultichannelMixerUnit.Parameter.volume, scope: .input, element: 1) == 0.25)
        #expect(try mixer.parameter(MultichannelMixerUnit.Parameter.volume, scope: .input, element: 3) == 1)
        #expect(try mixer.parameter(MultichannelMixerUnit.Parameter.volume, scope: .output, element: 0) == 0.75)
    }

    @Test func wrongValueKindIsInvalidPropertyValue() {
        let mixer = MultichannelMixerUnit()
        #expect(throws: AudioUnitError.invalidPropertyValue) { try mixer.setProperty(.streamFormat, scope: .input, element: 0, .uint32(1)) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try mixer.setProperty(.maximumFramesPerSlice, scope: .global, element: 0, .uint32(0)) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try mixer.setProperty(.maximumFramesPerSlice, scope: .global, element: 0, .float64(512)) }
        #expect(throws: AudioUnitError.propertyNotWritable) { try mixer.setProperty(.latency, scope: .global, element: 0, .float64(1)) }
    }

    @Test func unsupportedFormatsAreRejectedAtTheCall() throws {
        let gate = MuteGateUnit()
        let mixer = MultichannelMixerUnit()
        // Units render Float32 non-interleaved: other output formats are refused at the call.
        let int16 = try StreamFormat.int16(sampleRate: 48_000, channels: 2)
        let interleaved = try StreamFormat.float32(sampleRate: 48_000, channels: 2, interleaved: true)
        for unit in [gate, mixer] as [AudioUnit] {
            #expect(throws: AudioUnitError.formatNotSupported) { try unit.setStreamFormat(int16, scope: .output, element: 0) }
            #expect(throws: AudioUnitError.formatNotSupported) { try unit.setStreamFormat(interleaved, scope: .output, element: 0) }
        }
        // Formats that are not formats: 0 Hz, 0 channels, byte counts that disagree, 24-bit.
        var zeroRate = stereo; zeroRate.sampleRate = 0
        var zeroChannels = stereo; zeroChannels.channelsPerFrame = 0
        var mismatched = int16; mismatched.bytesPerFrame = 3
        var int24 = int16; int24.bitsPerChannel = 24; int24.bytesPerFrame = 6; int24.bytesPerPacket = 6
        var nanRate = stereo; nanRate.sampleRate = .nan
        for bad in [zeroRate, zeroChannels, mismatched, int24, nanRate] {
            for scope in [AudioUnitScope.input, .output] {
                #expect(throws: AudioUnitError.formatNotSupported) { try gate.setStreamFormat(bad, scope: scope, element: 0) }
                #expect(throws: AudioUnitError.formatNotSupported) { try mixer.setStreamFormat(bad, scope: scope, element: 0) }
            }
        }
        #expect(try gate.streamFormat(scope: .input, element: 0) == stereo, "unchanged after the failures")
        #expect(try mixer.streamFormat(scope: .output, element: 0) == stereo, "unchanged after the failures")
        // Inputs take any valid format (the graph converts); a linked unit's output follows as Float32.
        let int16Mono16k = try StreamFormat.int16(sampleRate: 16_000, channels: 1)
        try gate.setStreamFormat(int16Mono16k, scope: .input, element: 0)
        #expect(try gate.streamFormat(scope: .output, element: 0) == .float32(sampleRate: 16_000, channels: 1),
                "gate sides follow each other")
        try mixer.setStreamFormat(int16Mono16k, scope: .input, element: 3)
        #expect(try mixer.streamFormat(scope: .input, element: 3) == int16Mono16k)
        try gate.setStreamFormat(mono, scope: .input, element: 0)
        #expect(try gate.streamFormat(scope: .output, element: 0) == mono, "gate sides follow each other")
    }

    @Test func ioDeviceSidesAreReadOnlyAndEnableIOFollowsApple() throws {
        let io = IOUnit()
        #expect(throws: AudioUnitError.propertyNotWritable) { try io.setStreamFormat(mono, scope: .input, element: 1) }
        #expect(throws: AudioUnitError.propertyNotWritable) { try io.setStreamFormat(mono, scope: .output, element: 0) }
        guard case .uint32(let input) = try io.getProperty(.enableIO, scope: .input, element: 1),
              case .uint32(let output) = try io.getProperty(.enableIO, scope: .output, element: 0) else { Issue.record("kind"); return }
        #expect(input == 0 && output == 1)
        #expect(throws: AudioUnitError.invalidElement) { try io.getProperty(.enableIO, scope: .input, element: 0) }
        #expect(throws: AudioUnitError.invalidScope) { try io.getProperty(.enableIO, scope: .global, element: 0) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try io.setProperty(.enableIO, scope: .input, element: 1, .uint32(2)) }
    }

    @Test func initializedUnitsRefuseFormatChangesButAcceptTheSameFormat() throws {
        let chain = try Chain([MuteGateUnit(), MultichannelMixerUnit(inputs: 1)])
        let mixer = try chain.graph.nodeInfo(chain.nodes[1])
        let current = try mixer.streamFormat(scope: .output, element: 0)
        try mixer.setStreamFormat(current, scope: .output, element: 0)
        #expect(throws: AudioUnitError.initialized) { try mixer.setStreamFormat(mono, scope: .output, element: 0) }
        #expect(throws: AudioUnitError.initialized) { try mixer.setProperty(.maximumFramesPerSlice, scope: .global, element: 0, .uint32(512)) }
        #expect(throws: AudioUnitError.initialized) { try mixer.setProperty(.elementCount, scope: .input, element: 0, .uint32(4)) }
        #expect(throws: AudioUnitError.initialized) { try mixer.setProperty(.shouldAllocateBuffer, scope: .output, element: 0, .uint32(0)) }
        #expect(throws: AudioUnitError.initialized) { try chain.io.setInputEnabled(false) }
        #expect(try mixer.streamFormat(scope: .output, element: 0) == current)
    }

    @Test func aConnectedInputFormatIsNotWritable() throws {
        let chain = try Chain([MuteGateUnit(), MultichannelMixerUnit(inputs: 2)], initialize: false)
        let mixer = try chain.graph.nodeInfo(chain.nodes[1])
        #expect(throws: AudioUnitError.propertyNotWritable) { try mixer.setStreamFormat(mono, scope: .input, element: 0) }
        try mixer.setStreamFormat(mono, scope: .input, element: 1)
        #expect(try mixer.streamFormat(scope: .input, element: 1) == mono)
    }

    @Test func parametersValidateClampAndReadBack() throws {
        let filter = LowPassFilterUnit()
        let cutoff = LowPassFilterUnit.Parameter.cutoffFrequency
        #expect(try filter.parameter(cutoff, scope: .global) == 6900)
        #expect(try filter.parameter(LowPassFilterUnit.Parameter.resonance, scope: .global) == 0)
        try filter.setParameter(cutoff, 1, scope: .global)
        #expect(try filter.parameter(cutoff, scope: .global) == 10)
        try filter.setParameter(cutoff, 100_000, scope: .global)
        #expect(try filter.parameter(cutoff, scope: .global) == 24_000)
        try filter.setParameter(LowPassFilterUnit.Parameter.resonance, 99, scope: .global)
        #expect(try filter.parameter(LowPassFilterUnit.Parameter.resonance, scope: .global) == 40)
        #expect(throws: AudioUnitError.invalidParameter) { try filter.setParameter(cutoff, .nan, scope: .global) }
        #expect(throws: AudioUnitError.invalidParameter) { try filter.setParameter(cutoff, .infinity, scope: .global) }
        #expect(throws: AudioUnitError.invalidParameter) { try filter.setParameter(42, 1, scope: .global) }
        #expect(throws: AudioUnitError.invalidScope) { try filter.setParameter(cutoff, 1000, scope: .input) }
        #expect(try filter.parameter(cutoff, scope: .global) == 24_000, "failed sets changed nothing")

        let mixer = MultichannelMixerUnit(inputs: 2)
        let volume = MultichannelMixerUnit.Parameter.volume
        #expect(throws: AudioUnitError.invalidElement) { try mixer.setParameter(volume, 0.5, scope: .input, element: 2) }
        #expect(throws: AudioUnitError.invalidScope) { try mixer.setParameter(MultichannelMixerUnit.Parameter.pan, 0, scope: .output) }
        try mixer.setParameter(volume, 2.5, scope: .input, element: 0)
        #expect(try mixer.parameter(volume, scope: .input, element: 0) == 2.5, "volume accepts any finite value")
        try mixer.setParameter(MultichannelMixerUnit.Parameter.pan, -3, scope: .input, element: 1)
        #expect(try mixer.parameter(MultichannelMixerUnit.Parameter.pan, scope: .input, element: 1) == -1)
        for e in 0..<2 { #expect(try mixer.parameter(MultichannelMixerUnit.Parameter.enable, scope: .input, element: UInt32(e)) == 1) }

        let info = try filter.parameterInfo(cutoff, scope: .global)
        #expect(info.minValue == 10 && info.maxValue == 24_000 && info.defaultValue == 6900 && info.unit == .hertz)
        #expect(MuteGateUnit().parameterList(scope: .global).map(\.name) == ["Mute", "RampTime"])
    }
}
