// Units: the sample delay unit (kAudioUnitSubType_SampleDelay, AUSampleDelay) and its kernel.

/// Delays its input by a whole number of frames, exactly: the `kAudioUnitSubType_SampleDelay`
/// (AUSampleDelay) analogue, for aligning paths by hand.
///
/// - Output frame `f` is input frame `f − DelayFrames`, bit for bit (silence before the
///   start); DelayFrames 0 passes the input through unchanged.
/// - Range: 0…sampleRate frames (one second), as Apple's header gives it. Fractions round to
///   the nearest frame.
/// - Memory: the line holds one second at the rate the unit runs at (plus room for a slice of
///   1024 frames, which slices are processed in), allocated when the graph builds its plan, on
///   the control thread, and kept across plan rebuilds.
/// - Changes: a DelayFrames change crossfades linearly from the old delay to the new one over
///   10 ms (both read exactly), so it never clicks; then the output is exact again. A change
///   arriving during a crossfade starts when it ends. A scheduled immediate change jumps on its frame.
/// - The delay is the unit's purpose, not processing latency: the Latency property stays 0
///   (latency compensation leaves it alone). Tail time: DelayFrames / sampleRate.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class SampleDelayUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kSampleDelayParam_*`.
    public enum Parameter {
        /// DelayFrames (`kSampleDelayParam_DelayFrames`): frames, 0…sampleRate, default 0.
        public static let delayFrames: AudioUnitParameterID = 0
    }

    /// Creates a stereo sample delay of 0 frames (it passes its input through).
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .sampleDelay, inputFormats: [stereo], outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.delayFrames, name: "DelayFrames", scope: .global, unit: .sampleFrames,
                                minValue: 0, maxValue: 48_000, defaultValue: 0, clampsToRange: true)]
    }

    override func maxValue(of info: AudioUnitParameterInfo) -> Float { Float(currentSampleRate) }

    /// DelayFrames at the unit's rate.
    override var tailTime: Double { Double(bank.load(0).rounded()) / currentSampleRate }

    override var linksInputAndOutputFormats: Bool { true }

    override var kernelKind: KernelKind { .sampleDelay }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int, sampleRate: Double) -> Int {
        SampleDelayState.byteCount(channels: outputChannels, sampleRate: Float(sampleRate))
    }
    // A new delay starts at its DelayFrames (no crossfade from 0).
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        let frames = Int(bank.load(0).rounded())
        state.bindMemory(to: SampleDelayState.self, capacity: 1)
            .initialize(to: SampleDelayState(write: 0, delay: frames, to: frames, fade: 0, fading: false, designRate: 0))
    }
}

/// The sample delay kernel's state: this header, then `[channel][capacity]` lines. Trivial.
struct SampleDelayState {
    /// Ring position of the next frame written (the same for every channel).
    var write: Int
    /// The delay in frames now; during a crossfade, the one faded from.
    var delay: Int
    /// During a crossfade: the delay faded to, and how far (0…1).
    var to: Int
    var fade: Float
    var fading: Bool
    /// The rate the state was started at; 0 = not started.
    var designRate: Float

    /// Frames processed at once: the line has room for this many beyond the longest delay.
    static var chunk: Int { @_noLocks @inline(__always) get { 1024 } }
    /// Seconds a DelayFrames change takes to crossfade.
    static var fadeTime: Float { @_noLocks @inline(__always) get { 0.01 } }

    /// Frames per line at `sampleRate`: one second and a chunk, a power of two.
    @_noLocks @inline(__always)
    static func capacity(sampleRate: Float) -> Int {
        DelayLine.capacity(maximumDelay: Int(sampleRate) + 1 + chunk)
    }

    /// Bytes for `channels` lines at `sampleRate`.
    static func byteCount(channels: Int, sampleRate: Float) -> Int {
        MemoryLayout<SampleDelayState>.stride + channels * capacity(sampleRate: sampleRate) * MemoryLayout<Float>.stride
    }

    /// Channel `c`'s line, `capacity` floats.
    @_noLocks @inline(__always)
    static func line(_ state: UnsafeMutableRawPointer, capacity: Int, _ c: Int) -> UnsafeMutablePointer<Float> {
        (state + MemoryLayout<SampleDelayState>.stride).assumingMemoryBound(to: Float.self) + c * capacity
    }
}

/// The sample delay's kernel: ``DelayLine/whole(line:mask:write:input:output:frames:delay:)``
/// per channel, or ``DelayLine/crossfade(line:mask:write:input:output:frames:from:to:fade0:increment:)``
/// while DelayFrames changes.
enum SampleDelayKernel {
    /// Renders one piece. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: SampleDelayState.self)
        let channels = s.outputChannelCount
        let capacity = SampleDelayState.capacity(sampleRate: s.sampleRate), mask = capacity - 1
        // Bank slot 0: DelayFrames.
        let target = Int(RealTime.rintf(min(max(loadParameter(s.parameters, 0), 0), s.sampleRate)))
        if state.pointee.designRate != s.sampleRate || piece.snapsParameters {
            state.pointee.delay = target
            state.pointee.fading = false
            state.pointee.designRate = s.sampleRate
        }
        let increment = 1 / max(1, SampleDelayState.fadeTime * s.sampleRate)
        let input = s.inputs[0].channels, inChannels = s.inputs[0].channelCount
        var done = 0
        while done < piece.frames {
            let n = min(piece.frames - done, SampleDelayState.chunk)
            if !state.pointee.fading && target != state.pointee.delay {
                state.pointee.fading = true
                state.pointee.to = target
                state.pointee.fade = 0
            }
            var fade: Float = 0
            for c in 0..<channels {
                var source: UnsafePointer<Float>?
                if let input, c < inChannels { source = UnsafePointer(input[c] + piece.offset + done) }
                let line = SampleDelayState.line(s.state, capacity: capacity, c), output = s.output[c] + piece.offset + done
                if state.pointee.fading {
                    fade = DelayLine.crossfade(line: line, mask: mask, write: state.pointee.write, input: source, output: output,
                                               frames: n, from: state.pointee.delay, to: state.pointee.to,
                                               fade0: state.pointee.fade, increment: increment)
                } else {
                    DelayLine.whole(line: line, mask: mask, write: state.pointee.write, input: source, output: output,
                                    frames: n, delay: state.pointee.delay)
                }
            }
            if state.pointee.fading {
                state.pointee.fade = fade
                if fade >= 1 || channels == 0 {
                    state.pointee.delay = state.pointee.to
                    state.pointee.fading = false
                }
            }
            state.pointee.write = (state.pointee.write + n) & mask
            done += n
        }
    }
}
