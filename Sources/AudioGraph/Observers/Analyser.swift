// Observers: Analyser — the magnitude spectrum of a node's latest frames (Web Audio's AnalyserNode), computed on the reading thread.
import CKissFFT
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The magnitude spectrum and the waveform of the latest frames of one output element of a
/// node: Web Audio's `AnalyserNode`, as an observer (it changes nothing in the signal).
///
/// Install one with ``AudioGraph/installAnalyser(on:element:fftSize:smoothingTimeConstant:minDecibels:maxDecibels:)``.
/// The render thread only copies each slice (down-mixed to mono: the average of the element's
/// channels, which is Web Audio's down-mix for mono, stereo and quad) into a ring of the latest
/// 65 536 frames — one relaxed atomic store per frame, no lock, no allocation. The spectrum is
/// computed when you ask for it, on your thread.
///
/// ## What the numbers mean (the Web Audio specification, "AnalyserNode")
/// - **Time-domain data**: the latest ``fftSize`` frames, oldest first (zeros before the
///   element has rendered that many).
/// - **Frequency data**, ``frequencyBinCount`` = ``fftSize``/2 bins, bin `k` centred on
///   `k · sampleRate / fftSize` Hz (``frequency(ofBin:)``):
///   1. the latest ``fftSize`` frames `x[n]`, multiplied by the Blackman window
///      `w[n] = 0.42 − 0.5·cos(2πn/N) + 0.08·cos(4πn/N)` (α = 0.16);
///   2. `X[k] = (1/N)·Σ x[n]·w[n]·e^(−2πi·kn/N)` (KissFFT's real FFT, scaled by 1/N);
///   3. smoothed over time: `X̂[k] = τ·X̂_previous[k] + (1 − τ)·|X[k]|`, τ =
///      ``smoothingTimeConstant`` (0…1, default 0.8), `X̂_previous` being the previous call's;
///   4. in dB: `Y[k] = 20·log10(X̂[k])` (−∞ for an exactly silent bin) — the float data;
///   5. the byte data: `⌊255 / (maxDecibels − minDecibels) · (Y[k] − minDecibels)⌋`, clamped
///      to 0…255 (``minDecibels`` −100 and ``maxDecibels`` −30 by default).
///
///   A full-scale sine centred on a bin reads `20·log10(0.42 / 2)` = −13.56 dB there (the
///   window's mean, 0.42, times half the amplitude). As Web Audio specifies, a second call
///   before any new frame has arrived returns the previous result without smoothing again.
/// - **Byte time-domain data**: `⌊128·(1 + x)⌋` clamped to 0…255.
///
/// An analyser stays installed until ``AudioGraph/removeAnalyser(_:)``; dropping your
/// reference does not remove it.
///
/// Thread: every reading and setting from any thread; readers take turns on a lock (the FFT
/// runs under it) that the render thread never touches.
/// SAFETY (`@unchecked Sendable`): the settings and the smoothed spectrum are behind a ControlLock; the ring is atomics.
public final class Analyser: @unchecked Sendable {
    /// The node whose output is analysed.
    public let node: AUNode
    /// The output element analysed.
    public let element: AudioUnitElement

    let core: AnalyserCore
    let unit: AudioUnit
    private let state: ControlLock<AnalyserState>

    init(node: AUNode, element: AudioUnitElement, unit: AudioUnit, settings: AnalyserSettings, sampleRate: Double) {
        self.node = node
        self.element = element
        self.unit = unit
        core = AnalyserCore(sampleRate: sampleRate)
        state = ControlLock(AnalyserState(settings: settings))
    }

    deinit { state.withLock { $0.fft?.destroy() } }

    /// Frames per analysis, a power of two 32…32 768 (Web Audio's `fftSize`). Thread: any.
    public var fftSize: Int { state.withLock { $0.settings.fftSize } }
    /// Bins of frequency data: ``fftSize`` / 2 (Web Audio's `frequencyBinCount`). Thread: any.
    public var frequencyBinCount: Int { fftSize / 2 }
    /// τ of the smoothing over time, 0…1 (Web Audio's `smoothingTimeConstant`). Thread: any.
    public var smoothingTimeConstant: Double { state.withLock { $0.settings.smoothing } }
    /// The dB value byte data 0 stands for (Web Audio's `minDecibels`). Thread: any.
    public var minDecibels: Double { state.withLock { $0.settings.minDecibels } }
    /// The dB value byte data 255 stands for (Web Audio's `maxDecibels`). Thread: any.
    public var maxDecibels: Double { state.withLock { $0.settings.maxDecibels } }
    /// The sample rate of the element as last rendered (as installed before that), Hz. Thread: any.
    public var sampleRate: Double { Double(bitPattern: core.sampleRate.load(ordering: .relaxed)) }
    /// Frames the analyser has seen since installation. Thread: any.
    public var framesSeen: UInt64 { core.written.load(ordering: .relaxed) }

    /// The centre frequency of bin `k`: `k · sampleRate / fftSize`, Hz. Thread: any.
    public func frequency(ofBin k: Int) -> Double { Double(k) * sampleRate / Double(fftSize) }

    /// Sets the frames per analysis; the smoothing starts again from silence (as Web Audio does).
    /// - Parameter size: a power of two, 32…32 768.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` (Web Audio's IndexSizeError); nothing changes.
    /// - Thread: any.
    public func setFFTSize(_ size: Int) throws(AudioUnitError) {
        guard AnalyserSettings.isValidSize(size) else { throw .invalidPropertyValue }
        state.withLock { $0.settings.fftSize = size }
    }

    /// Sets τ of the smoothing over time.
    /// - Parameter value: 0 (none) … 1 (frozen).
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` outside 0…1 or NaN; nothing changes.
    /// - Thread: any.
    public func setSmoothingTimeConstant(_ value: Double) throws(AudioUnitError) {
        guard value >= 0, value <= 1 else { throw .invalidPropertyValue }
        state.withLock { $0.settings.smoothing = value }
    }

    /// Sets the dB range byte data spans.
    /// - Parameters:
    ///   - minDecibels: the dB value byte data 0 stands for, finite, below `maxDecibels`.
    ///   - maxDecibels: the dB value byte data 255 stands for, finite.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` otherwise (Web Audio's IndexSizeError); nothing changes.
    /// - Thread: any.
    public func setDecibelRange(minDecibels: Double, maxDecibels: Double) throws(AudioUnitError) {
        guard minDecibels.isFinite, maxDecibels.isFinite, minDecibels < maxDecibels else { throw .invalidPropertyValue }
        state.withLock { $0.settings.minDecibels = minDecibels; $0.settings.maxDecibels = maxDecibels }
    }

    /// Writes the frequency data in dB (see the type) into the first
    /// `min(array.count, frequencyBinCount)` elements of `array` (Web Audio's `getFloatFrequencyData`).
    /// - Thread: any; runs the FFT on the calling thread; allocates when the size changed.
    public func getFloatFrequencyData(_ array: inout [Float]) {
        state.withLock { s in
            update(&s)
            for k in 0..<min(array.count, s.smoothed.count) {
                array[k] = s.smoothed[k] > 0 ? Float(20 * log10(s.smoothed[k])) : -.infinity
            }
        }
    }

    /// Writes the frequency data as bytes (see the type) into the first
    /// `min(array.count, frequencyBinCount)` elements of `array` (Web Audio's `getByteFrequencyData`).
    /// - Thread: any; runs the FFT on the calling thread.
    public func getByteFrequencyData(_ array: inout [UInt8]) {
        state.withLock { s in
            update(&s)
            let low = s.settings.minDecibels, scale = 255 / (s.settings.maxDecibels - low)
            for k in 0..<min(array.count, s.smoothed.count) {
                let decibels = s.smoothed[k] > 0 ? 20 * log10(s.smoothed[k]) : -Double.infinity
                array[k] = UInt8(max(0, min(255, (scale * (decibels - low)).rounded(.down))))
            }
        }
    }

    /// Writes the latest frames, oldest first, into the first `min(array.count, fftSize)`
    /// elements of `array` (Web Audio's `getFloatTimeDomainData`).
    /// - Thread: any.
    public func getFloatTimeDomainData(_ array: inout [Float]) {
        let size = fftSize
        var frames = [Float](repeating: 0, count: size)
        _ = core.snapshot(into: &frames)
        for i in 0..<min(array.count, size) { array[i] = frames[i] }
    }

    /// Writes the latest frames as bytes, `⌊128·(1 + x)⌋` clamped to 0…255, into the first
    /// `min(array.count, fftSize)` elements of `array` (Web Audio's `getByteTimeDomainData`).
    /// - Thread: any.
    public func getByteTimeDomainData(_ array: inout [UInt8]) {
        var frames = [Float](repeating: 0, count: min(array.count, fftSize))
        getFloatTimeDomainData(&frames)
        for i in frames.indices { array[i] = UInt8(max(0, min(255, (128 * (1 + Double(frames[i]))).rounded(.down)))) }
    }

    /// The frequency data in dB, ``frequencyBinCount`` values. Thread: any.
    public func floatFrequencyData() -> [Float] {
        var array = [Float](repeating: 0, count: frequencyBinCount)
        getFloatFrequencyData(&array)
        return array
    }

    /// The frequency data as bytes, ``frequencyBinCount`` values. Thread: any.
    public func byteFrequencyData() -> [UInt8] {
        var array = [UInt8](repeating: 0, count: frequencyBinCount)
        getByteFrequencyData(&array)
        return array
    }

    /// The latest ``fftSize`` frames, oldest first. Thread: any.
    public func floatTimeDomainData() -> [Float] {
        var array = [Float](repeating: 0, count: fftSize)
        getFloatTimeDomainData(&array)
        return array
    }

    /// Brings the smoothed spectrum up to the latest frames, unless none arrived since the last
    /// computation at this size. Under the lock.
    private func update(_ s: inout AnalyserState) {
        let n = s.settings.fftSize
        if s.fft?.size != n || s.smoothed.count != n / 2 {
            s.fft?.destroy()
            s.fft = RealFFT(size: n)
            s.window = (0..<n).map { i in
                let x = 2 * Double.pi * Double(i) / Double(n)
                return Float(0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x))
            }
            s.frames = [Float](repeating: 0, count: n)
            s.bins = [kiss_fft_cpx](repeating: kiss_fft_cpx(r: 0, i: 0), count: n / 2 + 1)
            s.smoothed = [Double](repeating: 0, count: n / 2)
            s.computedAt = nil
        }
        let end = core.snapshot(into: &s.frames)
        if s.computedAt == end { return }
        s.computedAt = end
        guard let fft = s.fft else { return }
        for i in 0..<n { s.frames[i] *= s.window[i] }
        s.frames.withUnsafeBufferPointer { time in
            s.bins.withUnsafeMutableBufferPointer { fft.forward(time.baseAddress!, $0.baseAddress!) }
        }
        let tau = s.settings.smoothing, scale = 1 / Double(n)
        for k in 0..<n / 2 {
            let re = Double(s.bins[k].r), im = Double(s.bins[k].i)
            let magnitude = (re * re + im * im).squareRoot() * scale
            let previous = s.smoothed[k].isFinite ? s.smoothed[k] : 0
            s.smoothed[k] = tau * previous + (1 - tau) * magnitude
        }
    }
}

/// An analyser's settings (Web Audio's defaults). Trivial.
struct AnalyserSettings {
    var fftSize: Int = 2048
    var smoothing: Double = 0.8
    var minDecibels: Double = -100
    var maxDecibels: Double = -30

    /// A power of two, 32…32 768.
    static func isValidSize(_ size: Int) -> Bool { size >= 32 && size <= 32_768 && size & (size - 1) == 0 }
}

/// What readers share behind the analyser's lock.
struct AnalyserState: @unchecked Sendable {
    var settings: AnalyserSettings
    var fft: RealFFT?
    var window: [Float] = []
    var frames: [Float] = []
    var bins: [kiss_fft_cpx] = []
    /// `X̂[k]`, linear.
    var smoothed: [Double] = []
    /// `written` when `smoothed` was last computed.
    var computedAt: UInt64?
}

/// An analyser's render side: a ring of the latest mono frames as relaxed atomics (so readers
/// may copy while the render thread writes), and how many frames were written.
/// SAFETY (`@unchecked Sendable`): atomics only.
final class AnalyserCore: @unchecked Sendable {
    /// Frames the ring holds: twice the largest fftSize, so a reader copying the latest
    /// 32 768 frames has 32 768 frames of slack before the writer comes round.
    static var capacity: Int { 65_536 }
    let ring: UnsafeMutablePointer<Atomic<UInt32>>
    /// Frames written since installation; the newest is at `(written − 1) mod capacity`.
    let written = Atomic<UInt64>(0)
    /// The element's rate as last rendered (a Double's bits).
    let sampleRate: Atomic<UInt64>

    init(sampleRate: Double) {
        ring = .allocate(capacity: Self.capacity)
        for i in 0..<Self.capacity { (ring + i).initialize(to: Atomic(0)) }
        self.sampleRate = Atomic(sampleRate.bitPattern)
    }

    deinit {
        ring.deinitialize(count: Self.capacity)
        ring.deallocate()
    }

    /// Copies one slice in, down-mixed to mono (the channels' average). Render thread.
    @_noLocks
    func write(channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, channelCount: Int, frames: Int, sampleRate rate: Double) {
        let start = written.load(ordering: .relaxed)
        let mask = analyserRingCapacity &- 1
        let scale = channelCount > 0 ? 1 / Float(channelCount) : 0
        for f in 0..<frames {
            var x: Float = 0
            if let channels {
                for c in 0..<channelCount { x += channels[c][f] }
                x *= scale
            }
            ring[Int(truncatingIfNeeded: start &+ UInt64(f)) & mask].store(x.bitPattern, ordering: .relaxed)
        }
        if sampleRate.load(ordering: .relaxed) != rate.bitPattern { sampleRate.store(rate.bitPattern, ordering: .relaxed) }
        // Release: a reader that sees the new count sees the frames.
        written.store(start &+ UInt64(frames), ordering: .releasing)
    }

    /// Copies the latest `frames.count` frames, oldest first (zeros before the first frame), and
    /// returns the write count they end at. Retries if the writer came round meanwhile. Any thread.
    @discardableResult
    func snapshot(into frames: inout [Float]) -> UInt64 {
        let n = min(frames.count, Self.capacity / 2), mask = Self.capacity - 1
        while true {
            let end = written.load(ordering: .acquiring)
            for i in 0..<n {
                let position = Int64(end) - Int64(n) + Int64(i)
                frames[i] = position < 0 ? 0 : Float(bitPattern: ring[Int(position) & mask].load(ordering: .relaxed))
            }
            // The copies above before the count below (a seqlock reader's fence).
            atomicMemoryFence(ordering: .acquiring)
            if written.load(ordering: .relaxed) &- end <= UInt64(Self.capacity - n) { return end }
        }
    }
}

/// AnalyserCore.capacity as a computed global: render code cannot read a class's static members.
var analyserRingCapacity: Int { @_noLocks @inline(__always) get { 65_536 } }

extension AudioGraph {
    /// Installs an analyser on a node's output element (Web Audio's `createAnalyser()`); it sees
    /// every slice from the next one that renders the node, across ``update()``s, until removed.
    /// - Parameters:
    ///   - node: a node of this graph.
    ///   - element: output element: 0 (any output element of a unit with several), or for the
    ///     ``IOUnit`` 1 (the device input, as the graph receives it) or 0 (what the graph sends
    ///     to the device).
    ///   - fftSize: frames per analysis, a power of two 32…32 768 (default 2048).
    ///   - smoothingTimeConstant: 0…1 (default 0.8).
    ///   - minDecibels: the dB value byte data 0 stands for, finite, below `maxDecibels` (default −100).
    ///   - maxDecibels: the dB value byte data 255 stands for, finite (default −30).
    /// - Returns: the analyser; read it from any thread.
    /// - Throws: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/invalidElement``,
    ///   ``AudioUnitError/invalidPropertyValue`` (a setting out of bounds: Web Audio's
    ///   IndexSizeError), ``AudioUnitError/cannotDoInCurrentContext`` (called on the render thread).
    /// - Thread: control thread; allocates (a 256 KiB ring); may wait up to one render cycle.
    public func installAnalyser(on node: AUNode, element: AudioUnitElement = 0, fftSize: Int = 2048,
                                smoothingTimeConstant: Double = 0.8, minDecibels: Double = -100,
                                maxDecibels: Double = -30) throws(AudioUnitError) -> Analyser {
        let unit = try checkObservable(node, element)
        guard AnalyserSettings.isValidSize(fftSize), smoothingTimeConstant >= 0, smoothingTimeConstant <= 1,
              minDecibels.isFinite, maxDecibels.isFinite, minDecibels < maxDecibels else { throw .invalidPropertyValue }
        let settings = AnalyserSettings(fftSize: fftSize, smoothing: smoothingTimeConstant,
                                        minDecibels: minDecibels, maxDecibels: maxDecibels)
        let analyser = Analyser(node: node, element: element, unit: unit, settings: settings,
                                sampleRate: unit.outputFormats[Int(element)].sampleRate)
        unit.addObserver(ObserverEntry(kind: .analyser, element: element,
                                       target: Unmanaged.passUnretained(analyser.core).toOpaque()), owner: analyser.core)
        return analyser
    }

    /// Removes an analyser; when this returns the render thread no longer touches it, and its
    /// readings stay those of the frames it saw. Removing one twice does nothing.
    /// - Throws: ``AudioUnitError/cannotDoInCurrentContext`` (called on the render thread).
    /// - Thread: control thread; may wait up to one render cycle.
    public func removeAnalyser(_ analyser: Analyser) throws(AudioUnitError) {
        try checkControlThread()
        analyser.unit.removeObserver(target: Unmanaged.passUnretained(analyser.core).toOpaque())
    }
}
