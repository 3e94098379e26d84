// DSP: zeroing and copying `[channel][frame]` buffers (render thread).

@_noLocks @inline(__always)
func zero(_ buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, channels: Int, frames: Int) {
    for c in 0..<channels { buffers[c].update(repeating: 0, count: frames) }
}

@_noLocks @inline(__always)
func copy(_ src: UnsafeMutablePointer<Float>, to dst: UnsafeMutablePointer<Float>, frames: Int) {
    if src != dst { UnsafeMutableRawPointer(dst).copyMemory(from: src, byteCount: frames &* MemoryLayout<Float>.stride) }
}
