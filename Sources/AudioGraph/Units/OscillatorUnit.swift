// Units: the oscillator — Web Audio's OscillatorNode: sine and band-limited square, sawtooth, triangle — and its kernel.

/// A periodic generator: Web Audio's `OscillatorNode` (no Apple counterpart). No input elements;
/// one output element of any channel count, every channel the same signal.
///
/// The frequency it plays is Frequency × 2^(Detune / 1200), limited to 0…sampleRate/2. Sine is
/// read from a 4,096-point sine table; square, sawtooth and triangle from band-limited wavetables
/// (`BandLimitedTables`: Web Audio's Fourier series with every harmonic above the Nyquist
/// frequency left out): one table for a steady note, chosen afresh every 32 frames for the highest
/// frequency in them while the frequency moves. The phase is kept in Double (cycles), starts at
/// 0 (a sine starts at 0, rising) and is never reset by parameter changes, so frequency changes
/// are phase-continuous.
///
/// Ramps are sample-accurate: Frequency and Detune follow ``AudioUnit/scheduleParameters(_:)``'s
/// linear ramps and target approaches frame by frame (the per-frame phase increment is
/// interpolated linearly across each automation piece of at most 32 frames), and a plain
/// ``AudioUnit/setParameter(_:_:scope:element:)`` glides across the next slice. Waveform changes
/// at once (the phase carries on). Amplitude glides like a mixer volume.
///
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class OscillatorUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Web Audio's `frequency`, `detune` and `type`,
    /// and an amplitude of ours.
    public enum Parameter {
        /// Frequency: Hz, 0…sampleRate/2, default 440 (Web Audio's `frequency`; its negative
        /// range is not supported).
        public static let frequency: AudioUnitParameterID = 0
        /// Detune: cents, −153,600…153,600, default 0 (Web Audio's `detune` and its range).
        public static let detune: AudioUnitParameterID = 1
        /// Waveform: indexed, 0 sine, 1 square, 2 sawtooth, 3 triangle (``Waveform``), default 0
        /// (Web Audio's `type`, without "custom").
        public static let waveform: AudioUnitParameterID = 2
        /// Amplitude: linear gain, 0…1, default 1 (full scale, as Web Audio's oscillator).
        public static let amplitude: AudioUnitParameterID = 3
    }

    /// The values of the Waveform parameter.
    public enum Waveform: Int, Sendable, CaseIterable {
        /// sin(2πφ).
        case sine = 0
        /// +1 for the first half period, −1 for the second, band-limited.
        case square = 1
        /// Rising from −1 to +1 over the period (0 at φ = 0), band-limited.
        case sawtooth = 2
        /// 0 at φ = 0, +1 at ¼, −1 at ¾, band-limited.
        case triangle = 3
    }

    /// Creates a stereo 440 Hz sine at full scale.
    /// Thread: control thread (the first oscillator of a process builds the shared wavetables,
    /// about 1 MB).
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        _ = BandLimitedTables.shared
        super.init(type: .oscillator, inputFormats: [], outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.frequency, name: "Frequency", unit: .hertz,
                                minValue: 0, maxValue: 24_000, defaultValue: 440),
         AudioUnitParameterInfo(id: Parameter.detune, name: "Detune", unit: .cents,
                                minValue: -153_600, maxValue: 153_600, defaultValue: 0),
         AudioUnitParameterInfo(id: Parameter.waveform, name: "Waveform", unit: .indexed,
                                minValue: 0, maxValue: 3, defaultValue: 0),
         AudioUnitParameterInfo(id: Parameter.amplitude, name: "Amplitude", unit: .linearGain,
                                minValue: 0, maxValue: 1, defaultValue: 1)]
    }

    override func maxValue(of info: AudioUnitParameterInfo) -> Float {
        info.id == Parameter.frequency ? Float(currentSampleRate / 2) : info.maxValue
    }

    override var kernelKind: KernelKind { .oscillator }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int { MemoryLayout<OscillatorState>.stride }
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        state.bindMemory(to: OscillatorState.self, capacity: 1).initialize(to: OscillatorState(tables: WavetableReader()))
    }
}

/// The oscillator kernel's state. Trivial.
struct OscillatorState {
    /// Position in the period, 0 ≤ phase < 1.
    var phase: Double = 0
    /// Cycles per frame and amplitude at the end of the last piece; `started` false before the first.
    var increment: Double = 0
    var amplitude: Float = 0
    var started = false
    /// The shared wavetables.
    let tables: WavetableReader

    init(tables: WavetableReader) { self.tables = tables }
}

/// The oscillator's kernel.
enum OscillatorKernel {
    /// Frames read from one wavetable before the choice is made again.
    static var tablePiece: Int { @_noLocks @inline(__always) get { 32 } }

    /// Renders one piece into channel 0, then copies it to the others. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: OscillatorState.self)
        let p = s.parameters
        // Bank slots: the definitions' order (0 Frequency, 1 Detune, 2 Waveform, 3 Amplitude).
        let detune = loadParameter(p, 1)
        var frequency = Double(loadParameter(p, 0))
        if detune != 0 { frequency *= RealTime.pow(2, Double(detune) / 1200) }
        let rate = Double(s.sampleRate)
        let increment1 = min(max(frequency, 0), rate / 2) / rate
        let shape = min(max(Int(loadParameter(p, 2)), 0), 3)
        let amplitude1 = loadParameter(p, 3)
        var st = state.pointee
        if !st.started || piece.snapsParameters {
            st.increment = increment1
            st.amplitude = amplitude1
            st.started = true
        }
        let frames = piece.frames
        guard frames > 0, s.outputChannelCount > 0 else { state.pointee = st; return }
        let out = s.output[0] + piece.offset
        let increment0 = st.increment
        let slope = (increment1 - increment0) / Double(frames)
        var phase = st.phase
        if increment0 == increment1 {
            // Steady: one table for the whole piece.
            let table = shape == 0 ? st.tables.sine : st.tables.table(shape: shape - 1, maximumFrequency: increment1)
            for f in 0..<frames {
                out[f] = WavetableReader.read(table, phase: phase)
                phase += increment1
                if phase >= 1 { phase -= 1 }
            }
        } else {
            var done = 0
            while done < frames {
                let n = min(tablePiece, frames &- done)
                // Increments of this run's frames: increment0 + slope × (f + 1), f = done…done + n − 1;
                // the table for the highest of them.
                let first = increment0 + slope * Double(done &+ 1), last = increment0 + slope * Double(done &+ n)
                let table = shape == 0 ? st.tables.sine : st.tables.table(shape: shape - 1, maximumFrequency: max(first, last))
                for f in 0..<n {
                    out[done &+ f] = WavetableReader.read(table, phase: phase)
                    phase += increment0 + slope * Double(done &+ f &+ 1)
                    if phase >= 1 { phase -= 1 }
                }
                done = done &+ n
            }
        }
        if st.amplitude != 1 || amplitude1 != 1 { LinearGain.scale(out, frames: frames, from: st.amplitude, to: amplitude1) }
        for c in 1..<max(1, s.outputChannelCount) { copy(out, to: s.output[c] + piece.offset, frames: frames) }
        st.phase = phase
        st.increment = increment1
        st.amplitude = amplitude1
        state.pointee = st
    }
}
