// Formats: StreamFormat, the AudioStreamBasicDescription analogue, and its rules.

/// A linear-PCM stream format: the `AudioStreamBasicDescription` analogue.
///
/// Describes one side of an element: sample rate in Hz, sample type (32-bit float or 16/32-bit
/// signed integer, native endian, packed), layout (interleaved `[frame][channel]` or
/// non-interleaved `[channel][frame]`) and channel count. Field names and flag values mirror
/// `AudioStreamBasicDescription` and `kAudioFormatFlag*` in Apple's `CoreAudioTypes.h`.
///
/// A value is only as good as ``validate()``: the convenience constructors always produce valid
/// formats; a hand-built one is checked whenever it is handed to a unit.
/// Thread: a plain value, safe anywhere.
public struct StreamFormat: Hashable, Sendable, CustomStringConvertible {
    /// Mirrors `AudioFormatFlags` (`kAudioFormatFlagIsFloat` = 1 … `IsNonInterleaved` = 32).
    public struct Flags: OptionSet, Hashable, Sendable {
        /// The bits, as in `AudioFormatFlags`.
        public let rawValue: UInt32
        /// Creates flags from Apple's bit values.
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Mirrors `kAudioFormatFlagIsFloat` (1).
        public static let isFloat = Flags(rawValue: 1 << 0)
        /// Mirrors `kAudioFormatFlagIsBigEndian` (2). Not supported: formats are native (little) endian.
        public static let isBigEndian = Flags(rawValue: 1 << 1)
        /// Mirrors `kAudioFormatFlagIsSignedInteger` (4).
        public static let isSignedInteger = Flags(rawValue: 1 << 2)
        /// Mirrors `kAudioFormatFlagIsPacked` (8). Required.
        public static let isPacked = Flags(rawValue: 1 << 3)
        /// Mirrors `kAudioFormatFlagIsAlignedHigh` (16). Meaningless for packed formats.
        public static let isAlignedHigh = Flags(rawValue: 1 << 4)
        /// Mirrors `kAudioFormatFlagIsNonInterleaved` (32): one buffer per channel, `[channel][frame]`.
        public static let isNonInterleaved = Flags(rawValue: 1 << 5)
    }

    /// Mirrors `kAudioFormatLinearPCM` ('lpcm'), the only format ID supported.
    public static let linearPCM: UInt32 = 0x6C70_636D

    /// Frames per second, in Hz. Valid: finite, 1…768 000.
    public var sampleRate: Double
    /// The format ID; must be ``linearPCM``.
    public var formatID: UInt32
    /// Sample type and layout.
    public var formatFlags: Flags
    /// Bytes in one packet; equals `bytesPerFrame` for PCM.
    public var bytesPerPacket: UInt32
    /// Frames in one packet; always 1 for PCM.
    public var framesPerPacket: UInt32
    /// Bytes in one frame of one buffer: `channels × bytes per sample` interleaved, `bytes per sample` non-interleaved.
    public var bytesPerFrame: UInt32
    /// Channels per frame. Valid: 1…``maximumChannelCount``.
    public var channelsPerFrame: UInt32
    /// Bits per sample: 32 for float; 16 or 32 for signed integer.
    public var bitsPerChannel: UInt32

    /// The largest channel count a stream format may carry (JACK clients rarely exceed this).
    public static let maximumChannelCount: UInt32 = 64
    /// The highest sample rate accepted, in Hz.
    public static let maximumSampleRate: Double = 768_000

    /// Creates a format field by field, like filling in an `AudioStreamBasicDescription`.
    /// No check is made here; units call ``validate()`` when the format is handed to them.
    public init(sampleRate: Double, formatID: UInt32 = StreamFormat.linearPCM, formatFlags: Flags,
                bytesPerPacket: UInt32, framesPerPacket: UInt32, bytesPerFrame: UInt32,
                channelsPerFrame: UInt32, bitsPerChannel: UInt32) {
        self.sampleRate = sampleRate
        self.formatID = formatID
        self.formatFlags = formatFlags
        self.bytesPerPacket = bytesPerPacket
        self.framesPerPacket = framesPerPacket
        self.bytesPerFrame = bytesPerFrame
        self.channelsPerFrame = channelsPerFrame
        self.bitsPerChannel = bitsPerChannel
    }

    /// 32-bit float PCM, the engine's processing format (non-interleaved by default, like
    /// `AVAudioFormat(standardFormatWithSampleRate:channels:)`).
    /// - Parameters:
    ///   - sampleRate: Hz, finite, 1…768 000.
    ///   - channels: 1…64.
    ///   - interleaved: `false` gives `[channel][frame]` buffers.
    /// - Throws: ``AudioUnitError/formatNotSupported`` for a rate or channel count out of bounds.
    public static func float32(sampleRate: Double, channels: UInt32, interleaved: Bool = false) throws(AudioUnitError) -> StreamFormat {
        try pcm(sampleRate: sampleRate, channels: channels, bytes: 4, flags: .isFloat, interleaved: interleaved)
    }

    /// 16-bit signed-integer PCM (interleaved by default, like a WAV file or a speech recognizer's input).
    /// - Parameters:
    ///   - sampleRate: Hz, finite, 1…768 000.
    ///   - channels: 1…64.
    ///   - interleaved: `true` gives one `[frame][channel]` buffer.
    /// - Throws: ``AudioUnitError/formatNotSupported`` for a rate or channel count out of bounds.
    public static func int16(sampleRate: Double, channels: UInt32, interleaved: Bool = true) throws(AudioUnitError) -> StreamFormat {
        try pcm(sampleRate: sampleRate, channels: channels, bytes: 2, flags: .isSignedInteger, interleaved: interleaved)
    }

    private static func pcm(sampleRate: Double, channels: UInt32, bytes: UInt32, flags: Flags, interleaved: Bool) throws(AudioUnitError) -> StreamFormat {
        let perFrame = interleaved ? bytes &* channels : bytes
        let format = StreamFormat(
            sampleRate: sampleRate,
            formatFlags: flags.union(interleaved ? [.isPacked] : [.isPacked, .isNonInterleaved]),
            bytesPerPacket: perFrame, framesPerPacket: 1, bytesPerFrame: perFrame,
            channelsPerFrame: channels, bitsPerChannel: bytes * 8)
        try format.validate()
        return format
    }

    /// Whether samples are 32-bit float.
    public var isFloat: Bool { formatFlags.contains(.isFloat) }
    /// Whether each channel has its own buffer (`[channel][frame]`).
    public var isNonInterleaved: Bool { formatFlags.contains(.isNonInterleaved) }
    /// Whether this is the engine's native processing format: Float32, non-interleaved.
    public var isCanonical: Bool { isFloat && isNonInterleaved && bitsPerChannel == 32 }

    /// Checks that the fields describe one consistent, supported linear-PCM format.
    ///
    /// Rules: linear PCM; sample rate finite and 1…768 000 Hz; 1…64 channels; one packet = one
    /// frame; exactly one of float / signed integer; float is 32-bit, integer is 16- or 32-bit;
    /// packed; native endian; `bytesPerFrame` and `bytesPerPacket` match the layout.
    /// - Throws: ``AudioUnitError/formatNotSupported`` when any rule is broken.
    /// - Thread: any.
    public func validate() throws(AudioUnitError) {
        guard formatID == StreamFormat.linearPCM,
              sampleRate.isFinite, sampleRate >= 1, sampleRate <= StreamFormat.maximumSampleRate,
              channelsPerFrame >= 1, channelsPerFrame <= StreamFormat.maximumChannelCount,
              framesPerPacket == 1,
              formatFlags.contains(.isPacked), !formatFlags.contains(.isBigEndian)
        else { throw .formatNotSupported }
        let isFloat = formatFlags.contains(.isFloat)
        let isInt = formatFlags.contains(.isSignedInteger)
        guard isFloat != isInt else { throw .formatNotSupported }
        if isFloat { guard bitsPerChannel == 32 else { throw .formatNotSupported } }
        else { guard bitsPerChannel == 16 || bitsPerChannel == 32 else { throw .formatNotSupported } }
        let sampleBytes = bitsPerChannel / 8
        let expectedFrame = isNonInterleaved ? sampleBytes : sampleBytes * channelsPerFrame
        guard bytesPerFrame == expectedFrame, bytesPerPacket == expectedFrame else { throw .formatNotSupported }
    }

    /// This format with another channel count, same sample type and layout.
    /// - Throws: ``AudioUnitError/formatNotSupported`` when `channels` is out of 1…64.
    public func withChannels(_ channels: UInt32) throws(AudioUnitError) -> StreamFormat {
        var f = self
        f.channelsPerFrame = channels
        if !isNonInterleaved { f.bytesPerFrame = (bitsPerChannel / 8) &* channels; f.bytesPerPacket = f.bytesPerFrame }
        try f.validate()
        return f
    }

    /// This format at another sample rate.
    /// - Throws: ``AudioUnitError/formatNotSupported`` when `rate` is out of bounds.
    public func withSampleRate(_ rate: Double) throws(AudioUnitError) -> StreamFormat {
        var f = self
        f.sampleRate = rate
        try f.validate()
        return f
    }

    /// For example `48000 Hz, 2 ch, Float32, non-interleaved`.
    public var description: String {
        let type: String
        if formatFlags.contains(.isFloat) { type = "Float\(bitsPerChannel)" }
        else if formatFlags.contains(.isSignedInteger) { type = "Int\(bitsPerChannel)" }
        else { type = "flags 0x\(String(formatFlags.rawValue, radix: 16)) \(bitsPerChannel)-bit" }
        let rate = sampleRate == sampleRate.rounded() && sampleRate.isFinite ? String(Int(sampleRate)) : String(sampleRate)
        return "\(rate) Hz, \(channelsPerFrame) ch, \(type), \(isNonInterleaved ? "non-interleaved" : "interleaved")"
    }
}
