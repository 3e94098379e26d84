// SoundTouch (Debian libsoundtouch-dev, LGPL-2.1) is C++: Swift reaches it through the C shim
// target CSoundTouch. This system-library module only carries pkg-config's flags and the link.
