// webrtc-audio-processing 0.3 (Debian libwebrtc-audio-processing-dev, BSD-3-Clause) is C++: Swift
// reaches it through the C shim target CWebRTCAudioProcessing. This system-library module only
// carries pkg-config's flags (the include path) and the link.
