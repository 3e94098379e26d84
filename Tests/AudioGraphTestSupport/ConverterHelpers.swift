// Helpers shared by the test targets: driving an AudioConverter over whole signals.
import AudioGraph

/// Runs `converter` over `input` (per-channel Float arrays in the converter's input layout,
/// built by `pack`) in calls of `chunk` frames, then flushes; returns per-channel Float output.
public func runConverter(_ converter: AudioConverter, _ input: [[Float]], chunk: Int = 256, flush: Bool = true) throws -> [[Float]] {
    let inF = converter.inputFormat, outF = converter.outputFormat
    let frames = input[0].count
    let inBytes = pack(input, inF)
    var outChannels = [[Float]](repeating: [], count: Int(outF.channelsPerFrame))
    let capacity = converter.maximumOutputFrames(forInputFrames: max(chunk, converter.maximumInputFrames))
    let outBuffers = (0..<outF.bufferCount).map { _ in
        UnsafeMutableRawPointer.allocate(byteCount: capacity * Int(outF.bytesPerFrame), alignment: 16)
    }
    defer { outBuffers.forEach { $0.deallocate() } }
    func collect(_ produced: Int) {
        let unpacked = unpack(outBuffers, outF, frames: produced)
        for c in 0..<unpacked.count { outChannels[c] += unpacked[c] }
    }
    var done = 0
    while done < frames {
        let n = min(chunk, frames - done)
        let ins = inBytes.enumerated().map { (_, buffer) in
            UnsafeMutableRawPointer(mutating: buffer.withUnsafeBytes { $0.baseAddress! }) }
        let stride = Int(inF.bytesPerFrame)
        let offsetIns = ins.map { $0 + done * stride }
        let produced = try offsetIns.withUnsafeBufferPointer { inPtr in
            try outBuffers.withUnsafeBufferPointer { outPtr in
                try converter.convert(inPtr.baseAddress!, frameCount: n, into: outPtr.baseAddress!, capacity: capacity)
            }
        }
        collect(produced)
        done += n
    }
    if flush {
        let produced = try outBuffers.withUnsafeBufferPointer { try converter.flush(into: $0.baseAddress!, capacity: capacity) }
        collect(produced)
    }
    return outChannels
}

/// Per-channel floats → the raw buffers of `format` (as byte arrays).
public func pack(_ channels: [[Float]], _ format: StreamFormat) -> [[UInt8]] {
    let frames = channels[0].count, ch = channels.count
    func bytes<T>(_ values: [T]) -> [UInt8] { values.withUnsafeBytes { Array($0) } }
    func sample(_ x: Float) -> Int64 {
        let full: Double = format.bitsPerChannel == 16 ? 32_768 : 2_147_483_648
        return Int64(min(max((Double(x) * full).rounded(), -full), full - 1))
    }
    func encode(_ values: [Float]) -> [UInt8] {
        if format.isFloat { return bytes(values) }
        if format.bitsPerChannel == 16 { return bytes(values.map { Int16(sample($0)) }) }
        return bytes(values.map { Int32(sample($0)) })
    }
    if format.isNonInterleaved { return channels.map(encode) }
    var interleaved = [Float](repeating: 0, count: frames * ch)
    for c in 0..<ch { for i in 0..<frames { interleaved[i * ch + c] = channels[c][i] } }
    return [encode(interleaved)]
}

/// The raw buffers of `format` → per-channel floats.
public func unpack(_ buffers: [UnsafeMutableRawPointer], _ format: StreamFormat, frames: Int) -> [[Float]] {
    let ch = Int(format.channelsPerFrame)
    func value(_ buffer: UnsafeMutableRawPointer, _ index: Int) -> Float {
        if format.isFloat { return buffer.assumingMemoryBound(to: Float.self)[index] }
        if format.bitsPerChannel == 16 { return Float(buffer.assumingMemoryBound(to: Int16.self)[index]) / 32_768 }
        return Float(Double(buffer.assumingMemoryBound(to: Int32.self)[index]) / 2_147_483_648)
    }
    return (0..<ch).map { c in
        (0..<frames).map { i in format.isNonInterleaved ? value(buffers[c], i) : value(buffers[0], i * ch + c) }
    }
}

