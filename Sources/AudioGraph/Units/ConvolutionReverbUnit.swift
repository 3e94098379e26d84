// Units: the convolution reverb (Web Audio's ConvolverNode, PipeWire's convolver) — loading responses, the gapless swap, its kernel.
import CSndFile
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Why an impulse response was refused. Nothing changed: the unit keeps its previous response.
public enum ImpulseResponseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file is missing, unreadable or not audio libsndfile knows: its path and libsndfile's
    /// reason. ``osStatus``: `kAudioUnitErr_InvalidFile` (−10871).
    case cannotRead(path: String, reason: String)
    /// The response has no frames or no channels. ``osStatus``: `kAudioUnitErr_InvalidPropertyValue`.
    case empty
    /// The response lasts longer than ``ConvolutionReverbUnit/maximumDuration`` (10 s): its
    /// length in seconds. ``osStatus``: `kAudioUnitErr_InvalidPropertyValue`.
    case tooLong(seconds: Double)
    /// The samples cannot be used as given: what is wrong (channels of different lengths, a NaN
    /// or infinite sample, more than 64 channels, a sample rate outside 1…768 000 Hz).
    /// ``osStatus``: `kAudioUnitErr_InvalidPropertyValue`.
    case invalidResponse(String)
    /// A unit-level refusal: ``AudioUnitError/cannotDoInCurrentContext`` (called on the render
    /// thread), ``AudioUnitError/formatNotSupported`` (no resampler between the response's
    /// rate and the unit's), ``AudioUnitError/failedInitialization`` (the FFT plans could not be made).
    case audioUnit(AudioUnitError)

    /// The AudioUnit `OSStatus` this error corresponds to.
    public var osStatus: Int32 {
        switch self {
        case .cannotRead: return AudioUnitError.invalidFile.rawValue
        case .empty, .tooLong, .invalidResponse: return AudioUnitError.invalidPropertyValue.rawValue
        case .audioUnit(let error): return error.rawValue
        }
    }

    /// What went wrong and what to do, in one sentence.
    public var description: String {
        switch self {
        case .cannotRead(let path, let reason): return "cannot read the impulse response \(path): \(reason) (libsndfile)"
        case .empty: return "the impulse response is empty: give it at least one frame of one channel"
        case .tooLong(let seconds):
            return "the impulse response lasts \(seconds) s, longer than the convolver's maximum of \(ConvolutionReverbUnit.maximumDuration) s; trim it"
        case .invalidResponse(let why): return "the impulse response cannot be used: \(why)"
        case .audioUnit(let error): return "the impulse response was not loaded: \(error)"
        }
    }
}

/// A convolution reverb: each channel convolved with an impulse response — a room, a hall, a
/// speaker cabinet — recorded or synthesized. Web Audio's `ConvolverNode` and PipeWire
/// filter-chain's `convolver`; Apple ships no convolver (its AUReverb2 is algorithmic), so the
/// parameters mirror AUReverb2's `kReverb2Param_DryWetMix` and `kReverb2Param_Gain`.
///
/// **Algorithm**: `PartitionedConvolution` (DSP/) — uniformly partitioned overlap-save FFT
/// convolution (Wefers 2015) with the first partition as a direct-form FIR (Gardner 1995), so
/// the unit adds **no latency**: an impulse in gives the response out from the same frame. The
/// partition size is fixed at ``partitionSize`` (256 frames) whatever the slice size: the
/// head costs 256 multiply-adds per frame and channel, each further 256 frames of response
/// about 4 (plus FFTs of 512 points every 256 frames). KissFFT does the transforms.
///
/// **Channels** (the response's channels against the unit's, Web Audio's matrix): a mono
/// response is applied to every channel; a response with as many channels as the unit applies
/// channel by channel (`out[c] = in[c] ∗ h[c]`; with fewer, channel c uses response channel
/// `c mod K`); a 4-channel response on a stereo unit is "true stereo": `outL = inL ∗ h0 + inR ∗ h2`,
/// `outR = inL ∗ h1 + inR ∗ h3`.
///
/// **Loading**: ``loadImpulseResponse(contentsOf:)`` reads any file libsndfile reads (WAV, AIFF,
/// FLAC, Ogg…); ``setImpulseResponse(_:sampleRate:)`` takes samples. A response at another rate
/// is resampled to the unit's rate with an ``AudioConverter`` (libsamplerate) and scaled by
/// `responseRate / unitRate`, so its gain stays what it was at its own rate (a one-sample
/// impulse stays unity at DC). Responses up to ``maximumDuration`` (10 s) are accepted. All
/// preparation (reading, resampling, FFTs of the partitions, the plans) happens on the calling
/// control thread; a format change (rate or channels, at `initialize()` or `update()`) prepares
/// the kept response again there.
///
/// **Replacing the response while running** is gapless: the prepared convolution is published
/// through an atomic pointer; the render thread takes it at its next slice, copies the running
/// one's input history and frequency-domain delay line into it (so the new reverb already
/// rings with the past input), and crossfades linearly from the old output to the new over
/// ``crossfadeFrames`` (512) frames; then it hands the old one back, and the next control-thread
/// call (a load, a format change, or the unit's release) frees it. The render thread never
/// waits and never frees.
///
/// Input and output have the same format (setting either sets both). With no response the
/// wet signal is silence. ``AudioUnitPropertyID``'s TailTime reports the response's length.
/// Thread: parameters from any thread; loading and properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit; the response is handed to the render thread through the core's atomics.
public final class ConvolutionReverbUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror AUReverb2's.
    public enum Parameter {
        /// DryWetMix: percent, 0 (input only) … 100 (convolution only), default 100. Linear:
        /// `out = gain · ((1 − mix)·in + mix·wet)`. Mirrors `kReverb2Param_DryWetMix` (0; Apple's
        /// unit is CrossFade, the same 0…100). Changes ramp linearly across the next slice.
        public static let dryWetMix: AudioUnitParameterID = 0
        /// Gain: dB, −20…20, default 0, applied to the whole output. Mirrors `kReverb2Param_Gain` (1).
        public static let gain: AudioUnitParameterID = 1
    }

    /// B, frames per partition: the direct-form head's length and half the FFT size.
    public static var partitionSize: Int { 256 }
    /// The longest response accepted, in seconds (at the response's own rate).
    public static var maximumDuration: Double { 10 }
    /// Frames over which a replaced response crossfades into the new one.
    public static var crossfadeFrames: Int { ConvolutionKernel.crossfadeFrames }

    let core = ConvolverCore()
    /// The response as given (`[channel][frame]`) and its rate; kept to prepare it again after
    /// a format change.
    private var response: (samples: [[Float]], sampleRate: Double)?
    /// The rate and channel count the last published convolution was made for.
    private var preparedFor: (rate: Double, channels: Int)?

    /// Creates a stereo unit with no response (silent wet signal), DryWetMix 100 %, Gain 0 dB.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .convolutionReverb, inputFormats: [stereo], outputFormats: [stereo])
        renderLinks.context.store(Unmanaged.passUnretained(core).toOpaque(), ordering: .releasing)
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.dryWetMix, name: "DryWetMix", scope: .global, unit: .percent,
                                minValue: 0, maxValue: 100, defaultValue: 100, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.gain, name: "Gain", scope: .global, unit: .decibels,
                                minValue: -20, maxValue: 20, defaultValue: 0, clampsToRange: true)]
    }

    /// The response in use as given: frames and sample rate before resampling, channels; nil
    /// when there is none. Thread: control thread.
    public var impulseResponse: (frames: Int, sampleRate: Double, channels: Int)? {
        guard let response else { return nil }
        return (response.samples[0].count, response.sampleRate, response.samples.count)
    }

    /// Responses the render thread has switched to since the unit was made (each load, and each
    /// format change, counts once it is taken). Thread: any.
    public var swapCount: UInt64 { core.swaps.load(ordering: .relaxed) }

    /// Loads an impulse response from an audio file and swaps it in (gaplessly while running).
    /// - Parameter path: any file libsndfile reads; every channel of it is used (see the type's
    ///   channel matrix), at most ``maximumDuration`` seconds long.
    /// - Throws: ``ImpulseResponseError/cannotRead(path:reason:)`` (missing, unreadable, not audio),
    ///   ``ImpulseResponseError/empty``, ``ImpulseResponseError/tooLong(seconds:)``,
    ///   ``ImpulseResponseError/invalidResponse(_:)`` (more than 64 channels, NaN samples),
    ///   ``ImpulseResponseError/audioUnit(_:)``. The unit keeps its previous response.
    /// - Thread: control thread; allocates, reads the file, resamples and transforms it.
    public func loadImpulseResponse(contentsOf path: String) throws(ImpulseResponseError) {
        try checkControlThread()
        var info = SF_INFO()
        guard let file = sf_open(path, Int32(SFM_READ), &info) else {
            throw .cannotRead(path: path, reason: String(cString: sf_strerror(nil)))
        }
        defer { sf_close(file) }
        guard info.frames > 0, info.channels > 0 else { throw .empty }
        guard info.samplerate > 0 else { throw .invalidResponse("a sample rate of \(info.samplerate) Hz") }
        let seconds = Double(info.frames) / Double(info.samplerate)
        guard seconds <= Self.maximumDuration else { throw .tooLong(seconds: seconds) }
        guard info.channels <= Int32(StreamFormat.maximumChannelCount) else {
            throw .invalidResponse("\(info.channels) channels (at most \(StreamFormat.maximumChannelCount))")
        }
        let frames = Int(info.frames), channels = Int(info.channels)
        var interleaved = [Float](repeating: 0, count: frames * channels)
        let read = interleaved.withUnsafeMutableBufferPointer { sf_readf_float(file, $0.baseAddress, sf_count_t(frames)) }
        guard read == sf_count_t(frames) else {
            throw .cannotRead(path: path, reason: "read \(read) of \(frames) frames: \(String(cString: sf_strerror(file)))")
        }
        let samples = (0..<channels).map { c in (0..<frames).map { interleaved[$0 * channels + c] } }
        try setImpulseResponse(samples, sampleRate: Double(info.samplerate))
    }

    /// Sets the impulse response from samples and swaps it in (gaplessly while running).
    /// - Parameters:
    ///   - samples: `[channel][frame]`, 1…64 channels of the same length, 1 frame up to
    ///     ``maximumDuration`` seconds at `sampleRate`, all finite.
    ///   - sampleRate: the response's rate in Hz, 1…768 000; resampled to the unit's when different.
    /// - Throws: ``ImpulseResponseError/empty``, ``ImpulseResponseError/tooLong(seconds:)``,
    ///   ``ImpulseResponseError/invalidResponse(_:)``, ``ImpulseResponseError/audioUnit(_:)``.
    ///   The unit keeps its previous response.
    /// - Thread: control thread; allocates, resamples and transforms.
    public func setImpulseResponse(_ samples: [[Float]], sampleRate: Double) throws(ImpulseResponseError) {
        try checkControlThread()
        guard let frames = samples.first?.count, frames > 0 else { throw .empty }
        guard sampleRate.isFinite, sampleRate >= 1, sampleRate <= 768_000 else {
            throw .invalidResponse("a sample rate of \(sampleRate) Hz (1…768000)")
        }
        let seconds = Double(frames) / sampleRate
        guard seconds <= Self.maximumDuration else { throw .tooLong(seconds: seconds) }
        guard samples.count <= Int(StreamFormat.maximumChannelCount) else {
            throw .invalidResponse("\(samples.count) channels (at most \(StreamFormat.maximumChannelCount))")
        }
        guard samples.allSatisfy({ $0.count == frames }) else { throw .invalidResponse("channels of different lengths") }
        guard samples.allSatisfy({ $0.allSatisfy(\.isFinite) }) else { throw .invalidResponse("a NaN or infinite sample") }
        let channels = Int(outputFormats[0].channelsPerFrame), rate = outputFormats[0].sampleRate
        let convolution: PartitionedConvolution
        do { convolution = try Self.prepare(samples, sampleRate: sampleRate, channels: channels, rate: rate) }
        catch { throw .audioUnit(error) }
        response = (samples, sampleRate)
        preparedFor = (rate, channels)
        core.publish(convolution)
    }

    /// Removes the response: the wet signal fades to silence over ``crossfadeFrames``.
    /// - Throws: ``ImpulseResponseError/audioUnit(_:)`` with ``AudioUnitError/cannotDoInCurrentContext``
    ///   (called on the render thread) or ``AudioUnitError/failedInitialization`` (no memory for
    ///   the FFT plans); the response stays.
    /// - Thread: control thread.
    public func removeImpulseResponse() throws(ImpulseResponseError) {
        try checkControlThread()
        let channels = Int(outputFormats[0].channelsPerFrame), rate = outputFormats[0].sampleRate
        guard let silent = PartitionedConvolution(response: [[0]], channels: channels, sampleRate: rate,
                                                  blockSize: Self.partitionSize) else { throw .audioUnit(.failedInitialization) }
        response = nil
        preparedFor = (rate, channels)
        core.publish(silent)
    }

    private func checkControlThread() throws(ImpulseResponseError) {
        do { try graph?.checkControlThread() } catch { throw .audioUnit(error) }
    }

    /// The response resampled to `rate` (scaled by `sampleRate / rate`) and prepared for `channels`.
    static func prepare(_ samples: [[Float]], sampleRate: Double, channels: Int, rate: Double) throws(AudioUnitError) -> PartitionedConvolution {
        let resampled = sampleRate == rate ? samples : try resample(samples, from: sampleRate, to: rate)
        guard let convolution = PartitionedConvolution(response: resampled, channels: channels, sampleRate: rate,
                                                       blockSize: partitionSize) else { throw .failedInitialization }
        return convolution
    }

    /// `samples` (`[channel][frame]`) from one rate to another through an ``AudioConverter``
    /// (libsamplerate, time-aligned), ⌈frames × ratio⌉ frames long, scaled by `from / to`.
    static func resample(_ samples: [[Float]], from: Double, to: Double) throws(AudioUnitError) -> [[Float]] {
        let channels = samples.count, frames = samples[0].count
        let format = try StreamFormat.float32(sampleRate: from, channels: UInt32(channels))
        let converter = try AudioConverter(from: format, to: try format.withSampleRate(to), maximumInputFrames: 4096)
        let wanted = Int((Double(frames) * to / from).rounded(.up))
        let capacity = converter.maximumOutputFrames(forInputFrames: 4096)
        var result = [[Float]](repeating: [], count: channels)
        let input = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: 4096) }
        let output = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: capacity) }
        defer { input.forEach { $0.deallocate() }; output.forEach { $0.deallocate() } }
        let inRaw = input.map { UnsafeMutableRawPointer($0) }, outRaw = output.map { UnsafeMutableRawPointer($0) }
        func collect(_ produced: Int) {
            for c in 0..<channels { result[c].append(contentsOf: UnsafeBufferPointer(start: output[c], count: produced)) }
        }
        var done = 0
        while done < frames {
            let n = min(4096, frames - done)
            for c in 0..<channels { samples[c].withUnsafeBufferPointer { input[c].update(from: $0.baseAddress! + done, count: n) } }
            collect(try inRaw.withUnsafeBufferPointer { i throws(AudioUnitError) in
                try outRaw.withUnsafeBufferPointer { o throws(AudioUnitError) in
                    try converter.convert(i.baseAddress!, frameCount: n, into: o.baseAddress!, capacity: capacity)
                }
            })
            done += n
        }
        collect(try outRaw.withUnsafeBufferPointer { o throws(AudioUnitError) in try converter.flush(into: o.baseAddress!, capacity: capacity) })
        let scale = Float(from / to)
        return result.map { channel in
            var channel = Array(channel.dropFirst(converter.latencyFrames).prefix(wanted))
            if channel.count < wanted { channel += [Float](repeating: 0, count: wanted - channel.count) }
            for f in channel.indices { channel[f] *= scale }
            return channel
        }
    }

    // A new rate or channel count (initialize, update, setStreamFormat): the kept response is
    // prepared again for it and swapped in like a load.
    override var outputFormats: [StreamFormat] {
        didSet { formatChanged() }
    }

    private func formatChanged() {
        core.collectRetired()
        guard !outputFormats.isEmpty else { return }
        let channels = Int(outputFormats[0].channelsPerFrame), rate = outputFormats[0].sampleRate
        if let preparedFor, preparedFor.rate == rate, preparedFor.channels == channels { return }
        guard preparedFor != nil else { return }  // nothing loaded yet
        let convolution: PartitionedConvolution?
        if let response {
            convolution = try? Self.prepare(response.samples, sampleRate: response.sampleRate, channels: channels, rate: rate)
        } else {
            convolution = PartitionedConvolution(response: [[0]], channels: channels, sampleRate: rate, blockSize: Self.partitionSize)
        }
        guard let convolution else { return }
        preparedFor = (rate, channels)
        core.publish(convolution)
    }

    override var linksInputAndOutputFormats: Bool { true }

    override var tailTime: Double {
        guard let response else { return 0 }
        return Double(response.samples[0].count) / response.sampleRate
    }

    override var kernelKind: KernelKind { .convolution }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int { MemoryLayout<ConvolverState>.stride }
    // A new kernel starts at the gains the current parameters ask for (no ramp from zero).
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        let mix = min(max(bank.load(0) / 100, 0), 1)
        let decibels = bank.load(1)
        let gain = Float(pow(10, Double(decibels) / 20))
        state.bindMemory(to: ConvolverState.self, capacity: 1)
            .initialize(to: ConvolverState(dry: (1 - mix) * gain, wet: mix * gain, gainDecibels: decibels, gainLinear: gain))
    }
}

/// The convolution kernel's state: the output gains reached at the end of the last piece, and
/// the linear gain last computed from the Gain parameter. Trivial.
struct ConvolverState {
    /// Gain on the input (dry) signal: `(1 − mix)·gain`.
    var dry: Float
    /// Gain on the convolution (wet) signal: `mix·gain`.
    var wet: Float
    /// The Gain value (dB) `gainLinear` is for.
    var gainDecibels: Float
    var gainLinear: Float
}

/// What the control thread and the render thread share for one convolver: the handover of
/// prepared convolutions. Each pointer is an `Unmanaged<PartitionedConvolution>` retained by
/// whoever holds it; the render thread only moves pointers between the slots, so it never
/// retains, releases or frees.
///
/// - `pending`: published by the control thread (`exchange`; an untaken one it gets back is
///   released), taken by the render thread (`exchange` to nil) when no crossfade runs and two
///   retired slots are free.
/// - `active`, `incoming`, `fade`: the render thread's own (relaxed atomics so other threads
///   may read them): the convolution in use and, during a crossfade, the one taking over.
/// - `retired` (4 slots): convolutions replaced, handed back by the render thread after its last
///   use (release), released by the control thread (acquire) at its next publish. Only the
///   render thread fills a slot and only the control thread empties one. Each publish empties
///   them all and at most three can retire before the next (the active, the incoming and the
///   pending one), so a slot is always free when the render thread needs one.
/// SAFETY (`@unchecked Sendable`): atomics only, plus scratch memory the render thread alone touches.
final class ConvolverCore: @unchecked Sendable {
    let pending = Atomic<UnsafeMutableRawPointer?>(nil)
    let active = Atomic<UnsafeMutableRawPointer?>(nil)
    let incoming = Atomic<UnsafeMutableRawPointer?>(nil)
    /// `[4]` retired convolutions (addresses; 0 = free).
    let retired: UnsafeMutablePointer<Atomic<UInt>>
    /// Crossfade frames done (render thread).
    let fade = Atomic<Int>(0)
    let swaps = Atomic<UInt64>(0)
    /// `[channel][ConvolutionKernel.chunk]`: the incoming convolution's output during a crossfade.
    let scratch: UnsafeMutablePointer<Float>
    let scratchChannels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>

    init() {
        let channels = Int(StreamFormat.maximumChannelCount), chunk = ConvolutionKernel.chunk
        scratch = .allocate(capacity: channels * chunk)
        scratch.initialize(repeating: 0, count: channels * chunk)
        scratchChannels = .allocate(capacity: channels)
        for c in 0..<channels { (scratchChannels + c).initialize(to: scratch + c * chunk) }
        retired = .allocate(capacity: 4)
        for i in 0..<4 { (retired + i).initialize(to: Atomic(0)) }
    }

    deinit {
        // Nothing renders a unit that is being freed (plans retain their units).
        collectRetired()
        Self.release(pending.exchange(nil, ordering: .acquiring))
        Self.release(active.exchange(nil, ordering: .acquiring))
        Self.release(incoming.exchange(nil, ordering: .acquiring))
        retired.deinitialize(count: 4)
        retired.deallocate()
        scratch.deallocate()
        scratchChannels.deallocate()
    }

    private static func release(_ p: UnsafeMutableRawPointer?) {
        if let p { Unmanaged<PartitionedConvolution>.fromOpaque(p).release() }
    }

    /// Hands a prepared convolution to the render thread (replacing one not yet taken), and frees
    /// those the render thread has finished with. Control thread.
    func publish(_ convolution: PartitionedConvolution) {
        collectRetired()
        // Release: the render thread's acquiring exchange sees the prepared memory.
        Self.release(pending.exchange(Unmanaged.passRetained(convolution).toOpaque(), ordering: .acquiringAndReleasing))
    }

    /// Releases the convolutions the render thread handed back. Control thread.
    func collectRetired() {
        for i in 0..<4 {
            let done = retired[i].exchange(0, ordering: .acquiring)
            if done != 0 { Self.release(UnsafeMutableRawPointer(bitPattern: done)) }
        }
    }

    /// Free retired slots. Render thread.
    @_noLocks
    func freeRetiredSlots() -> Int {
        var free = 0
        for i in 0..<4 where retired[i].load(ordering: .relaxed) == 0 { free += 1 }
        return free
    }

    /// Hands a convolution back to the control thread (a free slot exists: see the type). Render thread.
    @_noLocks
    func retire(_ p: UnsafeMutableRawPointer) {
        for i in 0..<4 where retired[i].load(ordering: .relaxed) == 0 {
            retired[i].store(UInt(bitPattern: p), ordering: .releasing)
            return
        }
    }

    /// Takes a pending convolution if the render side can: it fits the step's format, no
    /// crossfade runs and two retired slots are free. Starts a crossfade from a running
    /// convolution of the same shape, or switches at once (from none, or from one made for
    /// another format, which renders nothing here). Render thread.
    @_noLocks
    func adoptPending(rate: Float, channels: Int) {
        guard pending.load(ordering: .relaxed) != nil, incoming.load(ordering: .relaxed) == nil, freeRetiredSlots() >= 2,
              let taken = pending.exchange(nil, ordering: .acquiringAndReleasing) else { return }
        guard ConvolutionKernel.fits(taken, rate: rate, channels: channels) else {
            // Made for a format the next plan brings: put it back for later, unless the control
            // thread has published a newer one meanwhile (then this one is done with).
            let (exchanged, _) = pending.compareExchange(expected: nil, desired: taken, ordering: .acquiringAndReleasing)
            if !exchanged { retire(taken) }
            return
        }
        swaps.add(1, ordering: .relaxed)
        if let current = active.load(ordering: .relaxed), ConvolutionKernel.fits(current, rate: rate, channels: channels) {
            let stream = ConvolutionKernel.convolution(current)._withUnsafeGuaranteedRef { $0.stream }
            ConvolutionKernel.convolution(taken)._withUnsafeGuaranteedRef { $0.prime(from: stream) }
            fade.store(0, ordering: .relaxed)
            incoming.store(taken, ordering: .relaxed)
        } else {
            if let current = active.load(ordering: .relaxed) { retire(current) }
            active.store(taken, ordering: .relaxed)
        }
    }

    /// Writes the convolution (wet signal only) of `frames` frames into `output[c][offset…]`:
    /// the active convolution's, crossfading to the incoming one's while a swap runs; silence
    /// when none fits the step's format. Render thread.
    @_noLocks
    func renderWet(_ input: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, inputChannels: Int,
                   _ output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, channels: Int,
                   offset: Int, frames: Int, rate: Float) {
        adoptPending(rate: rate, channels: channels)
        guard let current = active.load(ordering: .relaxed), ConvolutionKernel.fits(current, rate: rate, channels: channels) else {
            // The format changed under a crossfade: the incoming one takes over at once (it
            // does not fit either; the control thread has published one that does).
            if let next = incoming.load(ordering: .relaxed), let current = active.load(ordering: .relaxed) {
                incoming.store(nil, ordering: .relaxed)
                active.store(next, ordering: .relaxed)
                retire(current)
            }
            for c in 0..<channels { (output[c] + offset).update(repeating: 0, count: frames) }
            return
        }
        let scratch = scratchChannels  // a local: the closures below must not capture self
        var done = 0
        while done < frames {
            let now = active.load(ordering: .relaxed) ?? current
            guard let next = incoming.load(ordering: .relaxed) else {
                ConvolutionKernel.convolution(now)._withUnsafeGuaranteedRef {
                    $0.process(input, inputChannels: inputChannels, inputOffset: offset + done,
                               output, outputOffset: offset + done, frames: frames - done)
                }
                return
            }
            let faded = fade.load(ordering: .relaxed), length = ConvolutionKernel.crossfadeFrames
            let n = min(min(frames - done, ConvolutionKernel.chunk), length - faded)
            ConvolutionKernel.convolution(now)._withUnsafeGuaranteedRef {
                $0.process(input, inputChannels: inputChannels, inputOffset: offset + done,
                           output, outputOffset: offset + done, frames: n)
            }
            ConvolutionKernel.convolution(next)._withUnsafeGuaranteedRef {
                $0.process(input, inputChannels: inputChannels, inputOffset: offset + done,
                           scratch, outputOffset: 0, frames: n)
            }
            // Linear crossfade: the new output's weight reaches 1 on the fade's last frame.
            let step = 1 / Float(length)
            for c in 0..<channels {
                let out = output[c] + offset + done, new = scratch[c]
                for f in 0..<n {
                    let g = Float(faded + f + 1) * step
                    out[f] += (new[f] - out[f]) * g
                }
            }
            done += n
            if faded + n >= length {
                incoming.store(nil, ordering: .relaxed)
                active.store(next, ordering: .relaxed)
                retire(now)
            } else {
                fade.store(faded + n, ordering: .relaxed)
            }
        }
    }
}

/// The convolution reverb's kernel: the wet signal from the core, then the dry/wet mix and gain,
/// ramped linearly across the piece when they change.
enum ConvolutionKernel {
    /// Frames over which a replaced response crossfades (``ConvolutionReverbUnit/crossfadeFrames``).
    static var crossfadeFrames: Int { @_noLocks @inline(__always) get { 512 } }
    /// Frames per crossfade chunk: the core's scratch holds this many per channel.
    static var chunk: Int { @_noLocks @inline(__always) get { 256 } }

    @_noLocks @inline(__always)
    static func convolution(_ p: UnsafeMutableRawPointer) -> Unmanaged<PartitionedConvolution> {
        Unmanaged<PartitionedConvolution>.fromOpaque(p)
    }

    /// Whether a convolution was made for this rate and channel count.
    @_noLocks @inline(__always)
    static func fits(_ p: UnsafeMutableRawPointer, rate: Float, channels: Int) -> Bool {
        let made = convolution(p)._withUnsafeGuaranteedRef { (rate: Float($0.sampleRate), channels: $0.channels) }
        return made.rate == rate && made.channels == channels
    }

    /// Renders one piece. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let offset = piece.offset, frames = piece.frames
        let state = s.state.assumingMemoryBound(to: ConvolverState.self)
        let out = s.output
        let channels = s.outputChannelCount
        // Bank slots: the global parameters in definition order (0 DryWetMix, 1 Gain).
        let mix = min(max(loadParameter(s.parameters, 0) / 100, 0), 1)
        let decibels = loadParameter(s.parameters, 1)
        if decibels != state.pointee.gainDecibels {
            state.pointee.gainDecibels = decibels
            state.pointee.gainLinear = Float(RealTime.pow(10, Double(decibels) / 20))
        }
        let gain = state.pointee.gainLinear
        let dryTarget = (1 - mix) * gain, wetTarget = mix * gain
        if piece.snapsParameters {
            state.pointee.dry = dryTarget
            state.pointee.wet = wetTarget
        }
        let input = s.inputs[0].channels
        let inputChannels = input == nil ? 0 : s.inputs[0].channelCount
        if let context = s.links._withUnsafeGuaranteedRef({ $0.context.load(ordering: .acquiring) }) {
            Unmanaged<ConvolverCore>.fromOpaque(context)._withUnsafeGuaranteedRef {
                $0.renderWet(input, inputChannels: inputChannels, out, channels: channels,
                             offset: offset, frames: frames, rate: s.sampleRate)
            }
        } else {
            for c in 0..<channels { (out[c] + offset).update(repeating: 0, count: frames) }
        }
        let wet0 = state.pointee.wet, dry0 = state.pointee.dry
        for c in 0..<channels {
            LinearGain.scale(out[c] + offset, frames: frames, from: wet0, to: wetTarget)
            if let input, c < inputChannels, dry0 != 0 || dryTarget != 0 {
                LinearGain.accumulate(input[c] + offset, into: out[c] + offset, frames: frames, from: dry0, to: dryTarget, first: false)
            }
        }
        state.pointee.wet = wetTarget
        state.pointee.dry = dryTarget
    }
}
