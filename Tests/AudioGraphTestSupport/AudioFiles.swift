// Test support: audio files read back with libsndfile, to check what a recorder or tool wrote.
import CSndFile

/// A file read back with libsndfile: `[channel][frame]` floats (libsndfile's read scaling:
/// integers divided by 2^(bits−1)), and the file's header; nil when libsndfile cannot open it.
public func readAudioFile(_ path: String) -> (channels: [[Float]], info: SF_INFO)? {
    var info = SF_INFO()
    guard let file = sf_open(path, Int32(SFM_READ), &info) else { return nil }
    defer { sf_close(file) }
    var interleaved = [Float](repeating: 0, count: Int(info.frames) * Int(info.channels))
    let read = sf_readf_float(file, &interleaved, info.frames)
    let n = Int(info.channels)
    let channels = (0..<n).map { c in stride(from: c, to: Int(read) * n, by: n).map { interleaved[$0] } }
    return (channels, info)
}
