// graphrun: the followed file — the graph file, read again after each save however the editor saves.
import Foundation
import ToolSupport

/// Why the graph file could not be read: the system's reason ("No such file or directory",
/// "Permission denied", "Is a directory"), or that it is larger than a graph file can be.
struct FileReadError: Error, CustomStringConvertible {
    let path: String
    let reason: String
    var description: String { "cannot read '\(path)': \(reason)" }
}

/// The graph file and the version of it last read, followed through every way an editor saves:
/// in place, truncated and then written, written to a temporary file renamed over it (vim, VS
/// Code, sed -i: a new inode), deleted and made again.
///
/// How a save is noticed: the file's folder is watched with inotify (the kernel names each
/// change as it happens, so a save is read within milliseconds), and the file is also looked at
/// every ``pollMilliseconds`` — on file systems whose changes inotify does not see (NFS, FUSE,
/// a symbolic link's target elsewhere), or when inotify cannot be had, that alone still notices
/// a save within 0.2 s. A look is a `stat`; the file is read when its identity (device, inode,
/// size, modification and change times to the nanosecond) differs from the last read's, and
/// also while the last read was "racy": within ``racySeconds`` of the file's modification time,
/// when a second save in the same clock tick (a coarse file-system clock; FAT's 2 s) could keep
/// every field the same — git's racy-clean rule. What is applied is decided by the text: a
/// read whose text is the one last read changes nothing, so each save is applied once.
///
/// A save in progress is waited for: after inotify reports a write, a truncation, a creation or
/// a removal, the file is read when the writer closes it or renames it into place, or when
/// ``settleMilliseconds`` pass with no further change (a writer that pauses half-way: that
/// partial text is then read and refused, and the rest, when it comes, read again). A file
/// found empty (truncated and closed, the rest of the save to be appended) is also given the
/// settling time once before it is read as it is. A file that cannot be read is said once per
/// absence, not at each look, and said again when it is back.
final class FollowedFile {
    let path: String
    /// The text last read.
    private(set) var text: String
    /// Largest file read: a graph file is text of a few kilobytes.
    static let maximumBytes = 16 << 20
    /// How often the file is looked at without inotify's word (milliseconds).
    static let pollMilliseconds: Int32 = 200
    /// How long a write in progress is waited for before the file is read anyway.
    static let settleMilliseconds: Double = 150
    /// A read this close to the file's modification time is repeated at the next look.
    static let racySeconds: Double = 2
    /// How long after a read with no news inotify is asked again, and the file looked at, before
    /// the read stands (microseconds): see ``changedText(force:tool:)``.
    static let recheckMicroseconds: UInt32 = 3_000

    private var stamp: Stamp
    /// CLOCK_REALTIME (seconds) when the file was last read.
    private var readAt: Double
    private var missing = false
    private let watch: FolderWatch?
    /// A write in progress was reported: read at this monotonic time (ms), unless it is closed first.
    private var settleUntil: Double?
    /// inotify said the file is complete (closed after writing, renamed into place): read it.
    private var completeSaveSeen = false
    /// A read found the file empty and is waiting the settling time for the rest of the save.
    private var blankWaited = false

    /// The file's identity: what any save changes, short of a second one in the same clock tick.
    struct Stamp: Equatable {
        var device: UInt64, inode: UInt64, size: Int64
        var modified: timespec, changed: timespec
        init(_ info: stat) {
            device = UInt64(info.st_dev); inode = UInt64(info.st_ino); size = Int64(info.st_size)
            modified = info.st_mtim; changed = info.st_ctim
        }
        static func == (a: Stamp, b: Stamp) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    /// Reads the file and starts watching its folder (unless `AUDIOGRAPH_FOLLOW=poll` asks to
    /// look by polling alone, as on a file system without inotify).
    /// - Throws: ``FileReadError`` with the system's reason when it cannot be read.
    init(path: String, watch wanted: Bool = ProcessInfo.processInfo.environment["AUDIOGRAPH_FOLLOW"] != "poll") throws(FileReadError) {
        self.path = path
        let now = try FollowedFile.read(path).get()
        stamp = now.stamp
        text = now.text
        readAt = FollowedFile.realtime()
        watch = wanted ? FolderWatch(fileAt: path) : nil
    }

    /// Whether inotify watches the file's folder (else the file is followed by polling alone).
    var isWatched: Bool { watch != nil }

    /// A descriptor that becomes readable when inotify has news of the file (-1 when polling
    /// alone): the main loop's poll wakes on it.
    var wakeFileDescriptor: Int32 { watch?.fileDescriptor ?? -1 }

    /// How long the main loop may sleep before the next look (milliseconds).
    var nextLookMilliseconds: Int32 {
        guard let settleUntil else { return FollowedFile.pollMilliseconds }
        return Int32(max(1, min(Double(FollowedFile.pollMilliseconds), (settleUntil - FollowedFile.monotonicMilliseconds()).rounded(.up))))
    }

    /// The file's text when it changed since the last read (or always, when `force`), else nil.
    /// A file that cannot be read now is reported once per absence through `tool`, and its
    /// return is said too.
    ///
    /// With inotify, a read is checked against what inotify said while it ran: a look by
    /// `stat` (the polling fallback, or a racy re-read) can come between a writer's truncation
    /// and its write, or between an unlink and the new file; the kernel queues the writer's
    /// event before its call returns, so news drained after the read means the read may have
    /// seen a save half-way. Such a read is set aside (nothing said, nothing applied) and the
    /// save is waited for as inotify's news says. The kernel empties a file opened with O_TRUNC
    /// a moment before it queues the event, so a read with no news after it is checked once
    /// more, ``recheckMicroseconds`` later: news then, or a file whose identity changed since the
    /// read, sets it aside too.
    func changedText(force: Bool, tool: Tool) -> String? {
        absorb(watch?.drain() ?? [])
        // A read that raced a writer is set aside and taken again; a writer that never stops
        // changing the file is read after a few rounds all the same.
        for round in 0..<4 {
            if !force {
                // A writer at work: wait for it to close the file (or for the settling time to pass).
                if let settleUntil, !completeSaveSeen, FollowedFile.monotonicMilliseconds() < settleUntil { return nil }
                if !completeSaveSeen && !missing {
                    // No word from inotify: a look at the file's identity decides.
                    var info = stat()
                    if stat(path, &info) == 0, Stamp(info) == stamp, readAt - FollowedFile.seconds(stamp.modified) >= FollowedFile.racySeconds,
                       readAt - FollowedFile.seconds(stamp.changed) >= FollowedFile.racySeconds {
                        return nil
                    }
                }
            }
            settleUntil = nil
            completeSaveSeen = false
            watch?.rewatchIfLost()
            let result = FollowedFile.read(path)
            var late = watch?.drain() ?? []
            if watch != nil, late.isEmpty, round < 3 {
                // A writer inside open(O_TRUNC) or truncate() can have emptied the file and not
                // yet queued its event (measured: 1 run in 8 read an empty file with no news
                // before or after). Its call returns within microseconds: look again shortly,
                // at inotify's news and at the file's identity.
                usleep(FollowedFile.recheckMicroseconds)
                late = watch?.drain() ?? []
                var info = stat()
                if late.isEmpty, case .success(let read) = result, stat(path, &info) == 0, Stamp(info) != read.stamp {
                    late = [.inProgress]
                }
            }
            if !late.isEmpty, round < 3 {
                absorb(late)
                // A forced read (the `reload` command) stands unless a write is in progress.
                if !force || !late.contains(.inProgress) { continue }
            }
            let now: (stamp: Stamp, text: String)
            switch result {
            case .success(let read): now = read
            case .failure(let error):
                // Once per absence: editors that save by deleting and re-creating leave a gap.
                if !missing { tool.complain("cannot read '\(path)' now (\(error.reason)); still running the previous version") }
                missing = true
                return nil
            }
            // Emptied and closed (`: > FILE` before `cat … >> FILE`): the rest of the save usually
            // follows within milliseconds, and an empty file is never a graph. Waited for once,
            // the settling time, before it is read as it is.
            let blank = now.text.allSatisfy(\.isWhitespace)
            if blank, !force, !blankWaited, !text.allSatisfy(\.isWhitespace) {
                blankWaited = true
                settleUntil = FollowedFile.monotonicMilliseconds() + FollowedFile.settleMilliseconds
                return nil
            }
            blankWaited = false
            let wasMissing = missing
            missing = false
            stamp = now.stamp
            readAt = FollowedFile.realtime()
            guard force || now.text != text else {
                if wasMissing { tool.say("graphrun: '\(path)' can be read again, unchanged") }
                return nil
            }
            if wasMissing { tool.say("graphrun: '\(path)' can be read again") }
            text = now.text
            return now.text
        }
        return nil
    }

    /// Takes inotify's news in order: a write in progress starts (or extends) the settling
    /// time, and a save begun after a complete one is waited for again; a complete save (the
    /// last news) asks for a read at once.
    private func absorb(_ news: [FolderWatch.News]) {
        for item in news {
            switch item {
            case .inProgress:
                settleUntil = FollowedFile.monotonicMilliseconds() + FollowedFile.settleMilliseconds
                completeSaveSeen = false
            case .complete: completeSaveSeen = true
            }
        }
    }

    /// The file's identity and contents now, or the system's reason it cannot be read.
    private static func read(_ path: String) -> Result<(stamp: Stamp, text: String), FileReadError> {
        func failure(_ reason: String) -> Result<(stamp: Stamp, text: String), FileReadError> {
            .failure(FileReadError(path: path, reason: reason))
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return failure(String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return failure(String(cString: strerror(errno))) }
        if (info.st_mode & S_IFMT) == S_IFDIR { return failure(String(cString: strerror(EISDIR))) }
        // A FIFO or device would block or never end: a graph file is a regular file.
        if (info.st_mode & S_IFMT) != S_IFREG { return failure("not a regular file") }
        if Int(info.st_size) > maximumBytes { return failure("it is \(info.st_size) bytes; a graph file is at most \(maximumBytes >> 20) MiB") }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = Foundation.read(fd, &buffer, buffer.count)
            if n < 0 { if errno == EINTR { continue }; return failure(String(cString: strerror(errno))) }
            if n == 0 { break }
            data += buffer[0..<n]
            if data.count > maximumBytes { return failure("it is over \(maximumBytes >> 20) MiB; a graph file is at most that") }
        }
        return .success((Stamp(info), String(decoding: data, as: UTF8.self)))
    }

    private static func seconds(_ t: timespec) -> Double { Double(t.tv_sec) + Double(t.tv_nsec) / 1e9 }
    private static func realtime() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return seconds(now)
    }
    static func monotonicMilliseconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return seconds(now) * 1000
    }
}

/// inotify on the folder of one file, naming what happens to that file. The folder is watched,
/// not the file: a save that renames a new file over it, or deletes and re-creates it, gives a
/// new inode that a watch on the old one would never see.
final class FolderWatch {
    enum News { case inProgress, complete }
    let fileDescriptor: Int32
    private let folder: String
    private let name: [UInt8]
    private var watchDescriptor: Int32 = -1
    private var buffer = [UInt8](repeating: 0, count: 16_384)

    private static let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB
                                     | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    /// Nil when inotify cannot be had (no instances left) or the folder cannot be watched.
    init?(fileAt path: String) {
        let slash = path.lastIndex(of: "/")
        folder = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        name = Array((slash.map { String(path[path.index(after: $0)...]) } ?? path).utf8)
        fileDescriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fileDescriptor >= 0 else { return nil }
        watchDescriptor = inotify_add_watch(fileDescriptor, folder, FolderWatch.mask)
        guard watchDescriptor >= 0 else { close(fileDescriptor); return nil }
    }

    deinit { close(fileDescriptor) }

    /// Watches the folder again after it was removed or moved and is back (else the file is
    /// followed by polling until it is).
    func rewatchIfLost() {
        if watchDescriptor < 0 { watchDescriptor = inotify_add_watch(fileDescriptor, folder, FolderWatch.mask) }
    }

    /// What happened to the file since the last call, in order.
    func drain() -> [News] {
        var news: [News] = []
        while true {
            let n = read(fileDescriptor, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= n {
                let (mask, length) = buffer.withUnsafeBytes { raw -> (UInt32, Int) in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.mask, Int(event.len))
                }
                let nameBytes = buffer[(offset + header)..<min(n, offset + header + length)].prefix { $0 != 0 }
                offset += header + length
                if mask & UInt32(IN_Q_OVERFLOW) != 0 { news.append(.complete); continue }
                if mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                    // The folder itself went: look again, and watch it anew when it is back.
                    if mask & UInt32(IN_IGNORED) != 0 { watchDescriptor = -1 }
                    news.append(.complete)
                    continue
                }
                guard Array(nameBytes) == name else { continue }
                if mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_ATTRIB) != 0 { news.append(.complete) } else { news.append(.inProgress) }
            }
        }
        return news
    }
}
