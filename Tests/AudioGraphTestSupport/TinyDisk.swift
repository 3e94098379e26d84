// Test support: a real full disk — a tmpfs of a few hundred KiB mounted in a folder of its own (root only).
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A tmpfs of `kibibytes` mounted on a fresh folder under /tmp: a write past its size fails
/// with ENOSPC, as on a full disk. ``remove()`` unmounts it and removes the folder; call it in
/// a `defer`. Mounting needs root (`TinyDisk.canMount`).
public struct TinyDisk {
    /// The mount point; files made in it are on the tmpfs.
    public let path: String

    /// Whether this process may mount (it runs as root).
    public static var canMount: Bool { geteuid() == 0 }

    /// Mounts the tmpfs. Throws when mount(8) fails (a container without CAP_SYS_ADMIN), saying why.
    public init(kibibytes: Int) throws {
        var template = Array("/tmp/ag-tinydisk-\(getpid())-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TinyDiskError("mkdtemp: \(String(cString: strerror(errno)))") }
        path = String(cString: made)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=\(kibibytes)k", "tmpfs", path]
        let errors = Pipe()
        mount.standardError = errors
        try mount.run()
        mount.waitUntilExit()
        guard mount.terminationStatus == 0 else {
            rmdir(path)
            let why = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw TinyDiskError("mount -t tmpfs on \(path) failed: \(why)")
        }
    }

    /// Unmounts the tmpfs (its files go with it) and removes the mount point.
    public func remove() {
        let umount = Process()
        umount.executableURL = URL(fileURLWithPath: "/bin/umount")
        umount.arguments = [path]
        try? umount.run()
        umount.waitUntilExit()
        rmdir(path)
    }
}

/// Why a ``TinyDisk`` could not be made.
public struct TinyDiskError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
