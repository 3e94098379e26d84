// graphrun: the followed file — the graph file, read again whenever its identity (time, size, inode) changes.
import Foundation
import ToolSupport

/// Why the graph file could not be read: the system's reason ("No such file or directory",
/// "Permission denied", "Is a directory").
struct FileReadError: Error, CustomStringConvertible {
    let path: String
    let reason: String
    var description: String { "cannot read '\(path)': \(reason)" }
}

/// The graph file and the version of it last read. Editors save in place, or by writing a new
/// file and renaming it, or by deleting and re-creating it: any change of modification time,
/// size or inode counts, and a file that is briefly missing is said once, not each check.
final class FollowedFile {
    let path: String
    /// The text last read.
    private(set) var text: String
    private var stamp: [Int]
    private var missing = false

    /// Reads the file.
    /// - Throws: ``FileReadError`` with the system's reason when it cannot be read.
    init(path: String) throws(FileReadError) {
        self.path = path
        let now = try FollowedFile.read(path).get()
        stamp = now.stamp
        text = now.text
    }

    /// The file's text when it changed since the last read (or always, when `force`), else nil.
    /// A file that cannot be read now is reported once per absence through `tool`.
    func changedText(force: Bool, tool: Tool) -> String? {
        let now: (stamp: [Int], text: String)
        switch FollowedFile.read(path) {
        case .success(let read): now = read
        case .failure(let error):
            // Once per absence: editors that save by deleting and re-creating leave a gap.
            if !missing { tool.complain("cannot read '\(path)' now (\(error.reason)); still running the previous version") }
            missing = true
            return nil
        }
        missing = false
        guard force || now.stamp != stamp else { return nil }
        stamp = now.stamp
        guard force || now.text != text else { return nil }
        text = now.text
        return now.text
    }

    /// The file's identity and contents now: (modification time, size, inode) and its text, or
    /// the system's reason it cannot be read.
    private static func read(_ path: String) -> Result<(stamp: [Int], text: String), FileReadError> {
        func failure(_ code: Int32) -> Result<(stamp: [Int], text: String), FileReadError> {
            .failure(FileReadError(path: path, reason: String(cString: strerror(code))))
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return failure(errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return failure(errno) }
        if (info.st_mode & S_IFMT) == S_IFDIR { return failure(EISDIR) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = Foundation.read(fd, &buffer, buffer.count)
            if n < 0 { if errno == EINTR { continue }; return failure(errno) }
            if n == 0 { break }
            data += buffer[0..<n]
        }
        let stamp = [Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_size), Int(info.st_ino)]
        return .success((stamp, String(decoding: data, as: UTF8.self)))
    }
}
