// Units: the N-band EQ unit (kAudioUnitSubType_NBandEQ, AUNBandEQ) and its kernel.

/// An equalizer of up to 16 bands, each one RBJ cookbook biquad of its own type, in series,
/// then a global gain: the `kAudioUnitSubType_NBandEQ` (AUNBandEQ, AVAudioUnitEQ) analogue.
///
/// - Bands: ``numberOfBands`` (1…16, default 16; the `kAUNBandEQProperty_NumberOfBands`
///   property, set while uninitialized). Each band has FilterType, Frequency, Gain, Bandwidth and
///   BypassBand parameters whose IDs are Apple's: the band-0 ID plus the band number
///   (``Parameter``). A new band is bypassed, so a new EQ passes its input through bit for bit.
/// - Filter types (``FilterType``, Apple's `kAUNBandEQFilterType_*` values), all from the RBJ
///   Audio EQ Cookbook (Robert Bristow-Johnson). Bandwidth is in octaves, measured on the
///   digital filter (the cookbook's α = sin(w0)·sinh(ln(2)/2 · BW · w0/sin(w0))); the
///   "resonant" types take their α from Bandwidth the same way (the narrower, the more
///   resonant), the plain low/high-pass and shelf types use Q = 1/√2 (Butterworth; shelf slope
///   S = 1). ``FilterType/allPass`` (11) is ours, beyond Apple's list.
/// - Changes: Frequency and Gain glide (τ = 5 ms, in log-frequency and dB, as ``BiquadFilterUnit``'s);
///   FilterType and Bandwidth take effect at the next slice, from the same filter memory;
///   BypassBand crossfades the band in or out over 10 ms (a band fading in starts from silent
///   memory); GlobalGain ramps linearly across the slice. Scheduled immediate changes jump.
/// - The output is the cascade of the active bands, in band order, exactly: each band's
///   biquad runs in direct form I over the previous band's output (channels in pairs as vector
///   lanes), then GlobalGain. Memory below 1e-30 is set to exact zero.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class NBandEQUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kAUNBandEQParam_*`: a band's parameter
    /// is the band-0 ID plus the band number (band 3's Frequency is `frequency + 3`), for bands
    /// 0…numberOfBands − 1; other IDs answer ``AudioUnitError/invalidParameter``.
    public enum Parameter {
        /// GlobalGain (`kAUNBandEQParam_GlobalGain`): dB, −96…24, default 0. Applied after the bands.
        public static let globalGain: AudioUnitParameterID = 0
        /// BypassBand (`kAUNBandEQParam_BypassBand` + band): boolean, default 1 (bypassed).
        public static let bypassBand: AudioUnitParameterID = 1000
        /// FilterType (`kAUNBandEQParam_FilterType` + band): indexed, a ``FilterType`` raw
        /// value 0…11, default 0 (parametric); fractions round to the nearest type.
        public static let filterType: AudioUnitParameterID = 2000
        /// Frequency (`kAUNBandEQParam_Frequency` + band): Hz, 20…sampleRate/2, default 1000 —
        /// the cutoff, centre or shelf midpoint. The design frequency is capped at 0.49 × sampleRate.
        public static let frequency: AudioUnitParameterID = 3000
        /// Gain (`kAUNBandEQParam_Gain` + band): dB, −96…24, default 0 — for the parametric and
        /// shelf types (the others ignore it).
        public static let gain: AudioUnitParameterID = 4000
        /// Bandwidth (`kAUNBandEQParam_Bandwidth` + band): octaves, 0.05…5, default 0.5 — for
        /// the parametric, band-pass, band-stop, all-pass and resonant types (the others ignore it).
        public static let bandwidth: AudioUnitParameterID = 5000
    }

    /// A band's filter type: the FilterType parameter's values. Mirrors `kAUNBandEQFilterType_*`
    /// (and AVAudioUnitEQFilterType), plus ``allPass``.
    public enum FilterType: Int, CaseIterable, Sendable {
        /// `kAUNBandEQFilterType_Parametric`: a peaking band — Gain dB at Frequency, Bandwidth
        /// octaves between the frequencies at half that gain in dB (cookbook peakingEQ).
        case parametric = 0
        /// `kAUNBandEQFilterType_2ndOrderButterworthLowPass`: −3.01 dB at Frequency (cookbook LPF, Q = 1/√2).
        case butterworthLowPass = 1
        /// `kAUNBandEQFilterType_2ndOrderButterworthHighPass`: −3.01 dB at Frequency (cookbook HPF, Q = 1/√2).
        case butterworthHighPass = 2
        /// `kAUNBandEQFilterType_ResonantLowPass`: cookbook LPF, α from Bandwidth.
        case resonantLowPass = 3
        /// `kAUNBandEQFilterType_ResonantHighPass`: cookbook HPF, α from Bandwidth.
        case resonantHighPass = 4
        /// `kAUNBandEQFilterType_BandPass`: 0 dB at Frequency, −3.01 dB Bandwidth octaves apart (cookbook BPF, constant peak gain).
        case bandPass = 5
        /// `kAUNBandEQFilterType_BandStop`: the notch — silence at Frequency (cookbook notch).
        case bandStop = 6
        /// `kAUNBandEQFilterType_LowShelf`: Gain dB below Frequency (cookbook lowShelf, S = 1).
        case lowShelf = 7
        /// `kAUNBandEQFilterType_HighShelf`: Gain dB above Frequency (cookbook highShelf, S = 1).
        case highShelf = 8
        /// `kAUNBandEQFilterType_ResonantLowShelf`: cookbook lowShelf, α from Bandwidth (overshoots when narrow).
        case resonantLowShelf = 9
        /// `kAUNBandEQFilterType_ResonantHighShelf`: cookbook highShelf, α from Bandwidth.
        case resonantHighShelf = 10
        /// Ours (no Apple type): unity gain, phase turning around Frequency (cookbook APF, α from Bandwidth).
        case allPass = 11
    }

    /// The most bands an EQ has (`kAUNBandEQProperty_MaxNumberOfBands`).
    public static let maximumNumberOfBands = 16

    /// The number of bands, 1…16 (`kAUNBandEQProperty_NumberOfBands`). Thread: any (it changes
    /// only while uninitialized, through ``setNumberOfBands(_:)``).
    public private(set) var numberOfBands: Int

    /// Creates a stereo EQ with every band bypassed (it passes its input through) and 0 dB global gain.
    /// - Parameter bands: 1…16 (default 16); values outside are clamped.
    public init(bands: Int = NBandEQUnit.maximumNumberOfBands) {
        numberOfBands = min(max(bands, 1), Self.maximumNumberOfBands)
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .nBandEQ, inputFormats: [stereo], outputFormats: [stereo],
                   parameterDefinitions: Self.definitions(bands: numberOfBands))
    }

    /// Changes the number of bands; bands that stay keep their parameter values, new ones start
    /// bypassed with the defaults. Typed form of writing ``AudioUnitPropertyID/nBandEQNumberOfBands``.
    /// - Parameter count: 1…16.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` (outside 1…16),
    ///   ``AudioUnitError/initialized`` (a different count while initialized).
    /// - Thread: control thread; not concurrently with parameter calls on this unit.
    public func setNumberOfBands(_ count: Int) throws(AudioUnitError) {
        try graph?.checkControlThread()
        guard (1...Self.maximumNumberOfBands).contains(count) else { throw .invalidPropertyValue }
        if count == numberOfBands { return }
        guard !isInitialized else { throw .initialized }
        let old = bank, kept = min(count, numberOfBands)
        parameters = ParameterTable(Self.definitions(bands: count))
        bank = ParameterBank(values: defaultParameterValues(inputElements: inputFormats.count))
        // Slot 0 is GlobalGain; band b's five values follow at 1 + 5b (the definitions' order).
        for slot in 0..<(1 + 5 * kept) { bank.store(slot, old.load(slot)) }
        numberOfBands = count
    }

    /// GlobalGain, then each band's BypassBand, FilterType, Frequency, Gain, Bandwidth: the bank
    /// slots the kernel reads (band b's at 1 + 5b …).
    static func definitions(bands: Int) -> [AudioUnitParameterInfo] {
        var list = [AudioUnitParameterInfo(id: Parameter.globalGain, name: "GlobalGain", scope: .global, unit: .decibels,
                                           minValue: -96, maxValue: 24, defaultValue: 0, clampsToRange: true)]
        for b in 0..<bands {
            let band = AudioUnitParameterID(b)
            list += [
                AudioUnitParameterInfo(id: Parameter.bypassBand + band, name: "BypassBand\(b)", scope: .global, unit: .boolean,
                                       minValue: 0, maxValue: 1, defaultValue: 1, clampsToRange: true),
                AudioUnitParameterInfo(id: Parameter.filterType + band, name: "FilterType\(b)", scope: .global, unit: .indexed,
                                       minValue: 0, maxValue: Float(FilterType.allPass.rawValue), defaultValue: 0, clampsToRange: true),
                AudioUnitParameterInfo(id: Parameter.frequency + band, name: "Frequency\(b)", scope: .global, unit: .hertz,
                                       minValue: 20, maxValue: 24_000, defaultValue: 1000, clampsToRange: true),
                AudioUnitParameterInfo(id: Parameter.gain + band, name: "Gain\(b)", scope: .global, unit: .decibels,
                                       minValue: -96, maxValue: 24, defaultValue: 0, clampsToRange: true),
                AudioUnitParameterInfo(id: Parameter.bandwidth + band, name: "Bandwidth\(b)", scope: .global, unit: .octaves,
                                       minValue: 0.05, maxValue: 5, defaultValue: 0.5, clampsToRange: true),
            ]
        }
        return list
    }

    override func maxValue(of info: AudioUnitParameterInfo) -> Float {
        info.unit == .hertz ? Float(currentSampleRate / 2) : info.maxValue
    }

    override func getUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> AudioUnitPropertyValue {
        switch id {
        case .nBandEQNumberOfBands, .nBandEQMaxNumberOfBands:
            guard scope == .global else { throw .invalidScope }
            try checkElement(scope, element)
            return .uint32(UInt32(id == .nBandEQNumberOfBands ? numberOfBands : Self.maximumNumberOfBands))
        default:
            throw .invalidProperty
        }
    }

    override func setUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, _ value: AudioUnitPropertyValue) throws(AudioUnitError) {
        switch id {
        case .nBandEQNumberOfBands:
            guard scope == .global else { throw .invalidScope }
            try checkElement(scope, element)
            guard case .uint32(let count) = value else { throw .invalidPropertyValue }
            try setNumberOfBands(Int(min(count, 1024)))
        case .nBandEQMaxNumberOfBands:
            guard scope == .global else { throw .invalidScope }
            throw .propertyNotWritable
        default:
            throw .invalidProperty
        }
    }

    override var linksInputAndOutputFormats: Bool { true }

    override var kernelKind: KernelKind { .nBandEQ }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int {
        NBandEQState.byteCount(bands: numberOfBands, channels: outputChannels)
    }
    // A new EQ starts where its parameters put it: active bands fully in, the global gain at its value.
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        let globalGain = bank.load(0)
        let linear = Float(pow10(Double(globalGain) / 20))
        state.bindMemory(to: NBandEQState.self, capacity: 1)
            .initialize(to: NBandEQState(bandCount: Int32(numberOfBands), globalGain: globalGain, globalLinear: linear, targetLinear: linear))
        let mixes = NBandEQState.mixes(state)
        for b in 0..<numberOfBands { mixes[b] = bank.load(1 + 5 * b) >= 0.5 ? 0 : 1 }
    }

    private func pow10(_ x: Double) -> Double { RealTime.pow(10, x) }
}

/// The N-band EQ kernel's state: this header, 16 band mixes (1 = in, 0 = bypassed, between
/// while crossfading), `[band]` ``BiquadFilterState``, `[band][channel]` ``BiquadMemory64``,
/// then `[channel]` scratch of ``NBandEQKernel/fadeChunk`` frames. Trivial.
struct NBandEQState {
    var bandCount: Int32
    /// The GlobalGain (dB) `targetLinear` was made for.
    var globalGain: Float
    /// The global gain reached at the end of the last piece (ramps start here), and its target.
    var globalLinear: Float
    var targetLinear: Float

    /// Bytes for `bands` bands of `channels` channels.
    static func byteCount(bands: Int, channels: Int) -> Int {
        filtersOffset + bands * MemoryLayout<BiquadFilterState>.stride
            + bands * channels * BiquadFilter.memoryStride + channels * NBandEQKernel.fadeChunk * MemoryLayout<Float>.stride
    }

    /// `[band]` mixes, 0…1, room for 16.
    @_noLocks @inline(__always)
    static func mixes(_ state: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Float> {
        (state + MemoryLayout<NBandEQState>.stride).assumingMemoryBound(to: Float.self)
    }

    /// Where the design states start: after the mixes, 8-byte aligned.
    static var filtersOffset: Int {
        @_noLocks @inline(__always) get { (MemoryLayout<NBandEQState>.stride + 16 * MemoryLayout<Float>.stride + 7) & ~7 }
    }

    /// `[band]` design states.
    @_noLocks @inline(__always)
    static func filters(_ state: UnsafeMutableRawPointer) -> UnsafeMutablePointer<BiquadFilterState> {
        (state + filtersOffset).assumingMemoryBound(to: BiquadFilterState.self)
    }

    /// `[band][channel]` filter memory slots (``BiquadFilter/memoryStride`` bytes each): band
    /// b's channels start at slot `b × channels`. 8-byte aligned (the design states' stride is).
    @_noLocks @inline(__always)
    static func memory(_ state: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        let bands = Int(state.assumingMemoryBound(to: NBandEQState.self).pointee.bandCount)
        return UnsafeMutableRawPointer(filters(state) + bands)
    }

    /// `[channel][fadeChunk]` scratch: a crossfading band's input.
    @_noLocks @inline(__always)
    static func scratch(_ state: UnsafeMutableRawPointer, channels: Int) -> UnsafeMutablePointer<Float> {
        let bands = Int(state.assumingMemoryBound(to: NBandEQState.self).pointee.bandCount)
        return (memory(state) + bands * channels * BiquadFilter.memoryStride).assumingMemoryBound(to: Float.self)
    }
}

/// The N-band EQ's kernel: each active band a ``BiquadFilter`` over the previous one's output,
/// bands fading in and out, then the global gain (``LinearGain``).
enum NBandEQKernel {
    /// Frames per crossfade step while a band fades in or out (the scratch's length).
    static var fadeChunk: Int { @_noLocks @inline(__always) get { 32 } }
    /// Seconds a BypassBand change takes to crossfade.
    static var fadeTime: Float { @_noLocks @inline(__always) get { 0.01 } }

    /// The cookbook design of a FilterType value (rounded, clamped to 0…11).
    @_noLocks
    static func design(type value: Float) -> BiquadDesign {
        switch Int(RealTime.rintf(min(max(value, 0), 11))) {
        case 0: return BiquadDesign(.peaking, .octaves)
        case 1: return BiquadDesign(.lowPass, .butterworth)
        case 2: return BiquadDesign(.highPass, .butterworth)
        case 3: return BiquadDesign(.lowPass, .octaves)
        case 4: return BiquadDesign(.highPass, .octaves)
        case 5: return BiquadDesign(.bandPass, .octaves)
        case 6: return BiquadDesign(.notch, .octaves)
        case 7: return BiquadDesign(.lowShelf, .butterworth)
        case 8: return BiquadDesign(.highShelf, .butterworth)
        case 9: return BiquadDesign(.lowShelf, .octaves)
        case 10: return BiquadDesign(.highShelf, .octaves)
        default: return BiquadDesign(.allPass, .octaves)
        }
    }

    /// Renders one piece. With every band out and unity gain, on a whole slice, the input's
    /// buffers are passed on instead of copied. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let header = s.state.assumingMemoryBound(to: NBandEQState.self)
        let bands = Int(header.pointee.bandCount)
        let channels = s.outputChannelCount
        let offset = piece.offset, frames = piece.frames, snap = piece.snapsParameters
        let p = s.parameters
        let filters = NBandEQState.filters(s.state), mixes = NBandEQState.mixes(s.state)
        let memory = NBandEQState.memory(s.state), scratch = NBandEQState.scratch(s.state, channels: channels)
        let out = s.output
        // Bank slots: 0 GlobalGain; band b: 1 + 5b BypassBand, 2 + 5b FilterType, 3 + 5b
        // Frequency, 4 + 5b Gain, 5 + 5b Bandwidth.
        let globalGain = loadParameter(p, 0)
        if globalGain != header.pointee.globalGain {
            header.pointee.globalGain = globalGain
            header.pointee.targetLinear = Float(RealTime.pow(10, Double(globalGain) / 20))
        }
        if snap { header.pointee.globalLinear = header.pointee.targetLinear }
        let increment = 1 / max(1, fadeTime * s.sampleRate)
        // What the next band reads: the unit's input until a band has written the output.
        var source = s.inputs[0].channels
        var sourceChannels = s.inputs[0].channelCount
        for b in 0..<bands {
            let slots = p + 1 + 5 * b
            let goal: Float = loadParameter(slots, 0) >= 0.5 ? 0 : 1
            if snap { mixes[b] = goal }
            if mixes[b] == 0 && goal == 0 { continue }
            let target = BiquadTarget(design: design(type: loadParameter(slots, 1)), frequency: loadParameter(slots, 2),
                                      shape: loadParameter(slots, 4), gain: loadParameter(slots, 3))
            let bandMemory = memory + b * channels * BiquadFilter.memoryStride
            if mixes[b] == goal {
                BiquadFilter.render(filters + b, bandMemory, toward: target, sampleRate: s.sampleRate, snaps: snap,
                                    input: source, inputChannels: sourceChannels, output: out, channels: channels,
                                    offset: offset, frames: frames)
            } else {
                // Crossfade in chunks: out = in + mix·(filtered − in), mix moving toward the goal.
                var done = 0
                var mix = mixes[b]
                repeat {
                    let n = min(fadeChunk, frames - done)
                    for c in 0..<channels {
                        let dst = scratch + c * fadeChunk
                        if let source, c < sourceChannels { copy(source[c] + offset + done, to: dst, frames: n) }
                        else { dst.update(repeating: 0, count: n) }
                    }
                    BiquadFilter.render(filters + b, bandMemory, toward: target, sampleRate: s.sampleRate, snaps: false,
                                        input: source, inputChannels: sourceChannels, output: out, channels: channels,
                                        offset: offset + done, frames: n)
                    var end = mix
                    for c in 0..<channels {
                        let dry = scratch + c * fadeChunk, wet = out[c] + offset + done
                        var m = mix
                        for f in 0..<n {
                            m = goal > m ? min(goal, m + increment) : max(goal, m - increment)
                            wet[f] = dry[f] + m * (wet[f] - dry[f])
                        }
                        end = m
                    }
                    mix = end
                    done += n
                } while done < frames && mix != goal
                mixes[b] = mix
                if done < frames && goal == 1 {
                    // Faded in with frames to go: the rest filtered as usual.
                    BiquadFilter.render(filters + b, bandMemory, toward: target, sampleRate: s.sampleRate, snaps: false,
                                        input: source, inputChannels: sourceChannels, output: out, channels: channels,
                                        offset: offset + done, frames: frames - done)
                } else if done < frames {
                    // Faded out with frames to go: the rest is the band's input.
                    for c in 0..<channels {
                        let dst = out[c] + offset + done
                        if let source, c < sourceChannels { copy(source[c] + offset + done, to: dst, frames: frames - done) }
                        else { dst.update(repeating: 0, count: frames - done) }
                    }
                }
                if mix == 0 {
                    // Out: it fades in again from silent memory.
                    for c in 0..<channels { BiquadFilter.slot64(bandMemory, c).pointee = BiquadMemory64() }
                }
            }
            source = out
            sourceChannels = channels
        }
        let g0 = header.pointee.globalLinear, g1 = header.pointee.targetLinear
        header.pointee.globalLinear = g1
        if source != out {
            // No band ran: the input itself, passed on when nothing scales it.
            if g0 == 1 && g1 == 1 && piece.isWholeSlice, let source, sourceChannels >= channels {
                for c in 0..<channels { out[c] = source[c] }
                return
            }
            for c in 0..<channels {
                if let source, c < sourceChannels { copy(source[c] + offset, to: out[c] + offset, frames: frames) }
                else { (out[c] + offset).update(repeating: 0, count: frames) }
            }
        }
        if g0 != 1 || g1 != 1 {
            for c in 0..<channels { LinearGain.scale(out[c] + offset, frames: frames, from: g0, to: g1) }
        }
    }
}
