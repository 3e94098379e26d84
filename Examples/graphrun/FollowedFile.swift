// graphrun: the followed file — the graph file, read again whenever its identity (time, size, inode) changes.
import Foundation
import ToolSupport

/// The graph file and the version of it last read. Editors save in place, or by writing a new
/// file and renaming it, or by deleting and re-creating it: any change of modification time,
/// size or inode counts, and a file that is briefly missing is said once, not each check.
final class FollowedFile {
    let path: String
    /// The text last read.
    private(set) var text: String
    private var stamp: [Int]
    private var missing = false

    /// Reads the file; nil when it cannot be read.
    init?(path: String) {
        self.path = path
        guard let now = FollowedFile.read(path) else { return nil }
        stamp = now.stamp
        text = now.text
    }

    /// The file's text when it changed since the last read (or always, when `force`), else nil.
    /// A file that cannot be read now is reported once per absence through `tool`.
    func changedText(force: Bool, tool: Tool) -> String? {
        guard let now = FollowedFile.read(path) else {
            // Once per absence: editors that save by deleting and re-creating leave a gap.
            if !missing { tool.complain("cannot read '\(path)' now; still running the previous version") }
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

    /// The file's identity and contents now: (modification time, size, inode) and its text.
    private static func read(_ path: String) -> (stamp: [Int], text: String)? {
        var info = stat()
        guard stat(path, &info) == 0, let data = FileManager.default.contents(atPath: path) else { return nil }
        let stamp = [Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_size), Int(info.st_ino)]
        return (stamp, String(decoding: data, as: UTF8.self))
    }
}
