import AudioEngine
import PlatformSupport
import Foundation
import Glibc
import MusicKitCore
import Synchronization

/// MPD's client protocol, a documented subset, served by musickitd on a Unix socket
/// (`$XDG_RUNTIME_DIR/musickit/mpd.sock`; `MPD_HOST=<that path> mpc ...`), so that mpc,
/// ncmpcpp and phone apps drive the system player.
///
/// Commands: `status`, `currentsong` (with `arturl`, see there), `play [POS]`, `playid [ID]`, `pause [0|1]`, `stop`, `next`,
/// `previous`, `seek POS TIME`, `seekid ID TIME`, `seekcur [+|-]TIME`, `add URI`, `addid URI [POS]`,
/// `clear`, `delete POS|START:END`, `deleteid ID`, `move FROM TO`, `playlistinfo [POS|START:END]`,
/// `playlistid [ID]`, `plchanges VERSION`, `repeat`, `random`, `single` (see `setModes`), `consume` (0 only),
/// `find`/`search`/`findadd`/`searchadd TYPE WHAT…` (title, artist, albumartist, album, genre,
/// date, track, disc, file, any; in MPD's database order) over the library and the catalog,
/// `list TAG [TYPE WHAT…] [group TAG]`, `lsinfo [FOLDER]` (the library's folders), `stats`,
/// `listplaylists`/`load NAME` (the library's playlists), `decoders`,
/// `idle [SUBSYSTEMS]`/`noidle` (as MPD: changes since the
/// client's last `idle` are kept for it; `noidle` outside `idle` is ignored), `command_list_begin`,
/// `command_list_ok_begin`, `command_list_end`, `ping`, `close`, `tagtypes`, `outputs`,
/// `commands`. A URI is a file path, `file://…`, or `musickit:ID` (a catalog or library ID).
/// Anything else gets MPD's `ACK [5@0] {command} unknown command`.
///
/// `add` takes regular audio files only, answering as MPD does otherwise: `ACK [52]` for no
/// such file, `ACK [50] No such song` for a directory, device, pipe or a file no decoder opens.
/// On the TCP port (where another local user may be) it takes only files inside the library's
/// folders and `musickit:` IDs; anything else is `ACK [4] Access denied`, existing or not.
/// Work that may block (a file opened to check it, a catalog lookup, a search) runs on the
/// client's own thread, outside the daemon's operations queue, so no one else waits for it;
/// `pause` and `stop` too, so that they never wait for another client's `play`.
///
/// Song IDs are the queue entries' serial numbers; positions are queue indices.
final class MPDProtocolServer: @unchecked Sendable {
    // @unchecked: mutable state is in `state` (a Mutex); the player is thread-safe.
    private let player: ApplicationMusicPlayer
    /// Called after a command changed something (the daemon saves and tells its clients).
    private let changed: @Sendable () -> Void

    private struct State {
        var playlistVersion = 1
        var idlers: [UInt64: Idler] = [:]
        var nextIdler: UInt64 = 1
    }

    /// A connected client: what changed since its last `idle` answered (MPD keeps these for
    /// every client, so an `idle` sent after a change answers at once: ncmpcpp sends `status`,
    /// then `idle`), and, while it waits in `idle`, the subsystems it waits for and a pipe that
    /// wakes its thread.
    private struct Idler {
        var changes: Set<String> = []
        var waiting: (wanted: Set<String>, wake: Int32)?
    }

    private let state = Mutex(State())
    static let protocolVersion = "0.23.5"
    /// A command line longer than this ends the connection.
    static let maximumLineBytes = 65_536
    /// A command list longer than this (its lines' bytes) ends the connection, as MPD's
    /// `max_command_list_size` (2 MiB by default) does.
    static let maximumCommandListBytes = 2 << 20

    /// The daemon's queue for changes to the player (commands run there, one at a time).
    private let operations: DaemonOperations
    /// When the server started, for `stats`'s uptime.
    private let started = Date()

    init(player: ApplicationMusicPlayer, operations: DaemonOperations, changed: @escaping @Sendable () -> Void) {
        self.player = player
        self.operations = operations
        self.changed = changed
    }

    /// Listens on `path` (0600) and serves each client on its own thread; refuses other users.
    func listen(path: String) throws {
        serve(from: try SystemPlayerWire.listen(at: path), checkingUser: true)
    }

    /// Serves clients on `listener`, a Unix socket already listening (systemd's socket
    /// activation); refuses other users.
    func listen(descriptor listener: Int32) {
        serve(from: listener, checkingUser: true)
    }

    /// Listens on 127.0.0.1:`port` too (off unless asked for: any local user can connect there,
    /// as to MPD without a password).
    func listen(loopbackPort port: UInt16) throws {
        serve(from: try SystemPlayerWire.listenOnLoopback(port: port), checkingUser: false)
    }

    private func serve(from listener: Int32, checkingUser: Bool) {
        let acceptors = ConnectionAcceptors(listener: listener, name: "musickitd.mpd", admit: { descriptor in
            !checkingUser || SystemPlayerWire.peerIsThisUser(descriptor)
        }, serve: { [weak self] descriptor in
            self?.serve(descriptor, ownUser: checkingUser)
        })
        acceptors.start()
    }

    /// Something changed in `subsystems` (player, playlist, options): idle clients wake.
    func notify(_ subsystems: Set<String>) {
        // The wake-ups are written under the lock: an idler is removed under it before its pipe is
        // closed, so no byte goes to a closed pipe's descriptor number after it was reused.
        state.withLock { state in
            if subsystems.contains("playlist") { state.playlistVersion += 1 }
            for (id, idler) in state.idlers {
                state.idlers[id]?.changes.formUnion(subsystems)
                guard let waiting = idler.waiting,
                      !(waiting.wanted.isEmpty ? subsystems : subsystems.intersection(waiting.wanted)).isEmpty else { continue }
                var byte: UInt8 = 1
                _ = write(waiting.wake, &byte, 1)  // non-blocking; a full pipe already wakes it
            }
        }
    }

    // MARK: - A client

    private final class Connection {
        let descriptor: Int32
        /// Its entry in `State.idlers` (what changed since its last `idle`).
        var idlerID: UInt64 = 0
        /// Whether the peer is known to be the daemon's own user (the Unix socket checks it);
        /// otherwise files are served only from the library's folders.
        let ownUser: Bool
        var buffer: [UInt8] = []
        init(descriptor: Int32, ownUser: Bool) {
            self.descriptor = descriptor
            self.ownUser = ownUser
        }

        func send(_ text: String) -> Bool {
            (try? Array(text.utf8).withUnsafeBytes { try SystemPlayerWire.sendAll($0, on: descriptor) }) != nil
        }

        /// The next line (without its newline); nil when the client left or sent a line over the limit.
        func readLine() -> String? {
            while true {
                if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    return line
                }
                guard buffer.count <= MPDProtocolServer.maximumLineBytes else { return nil }
                var chunk = [UInt8](repeating: 0, count: 4_096)
                let count = recv(descriptor, &chunk, chunk.count, 0)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return nil }
                buffer += chunk[0..<count]
            }
        }
    }

    private func serve(_ descriptor: Int32, ownUser: Bool) {
        let connection = Connection(descriptor: descriptor, ownUser: ownUser)
        connection.idlerID = state.withLock { state in
            defer { state.nextIdler += 1 }
            state.idlers[state.nextIdler] = Idler()
            return state.nextIdler
        }
        defer { _ = state.withLock { $0.idlers.removeValue(forKey: connection.idlerID) } }
        guard connection.send("OK MPD \(Self.protocolVersion)\n") else { return }
        var list: [String]?
        var listBytes = 0
        var listOK = false
        while let line = connection.readLine() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "command_list_begin" || trimmed == "command_list_ok_begin" {
                list = []
                listBytes = 0
                listOK = trimmed == "command_list_ok_begin"
                continue
            }
            if trimmed == "command_list_end", let commands = list {
                list = nil
                var output = ""
                var failed = false
                for (index, command) in commands.enumerated() {
                    switch run(command, connection: connection) {
                    case .success(let text):
                        output += text
                        if listOK { output += "list_OK\n" }
                    case .failure(let error):
                        output += error.line(index: index)
                        failed = true
                    case .closed:
                        return
                    case .silent:
                        if listOK { output += "list_OK\n" }
                    }
                    if failed { break }
                }
                guard connection.send(failed ? output : output + "OK\n") else { return }
                continue
            }
            if list != nil {
                listBytes += trimmed.utf8.count + 1
                guard listBytes <= Self.maximumCommandListBytes else { return }  // MPD closes too
                list?.append(trimmed)
                continue
            }
            switch run(trimmed, connection: connection) {
            case .success(let text): guard connection.send(text + "OK\n") else { return }
            case .failure(let error): guard connection.send(error.line(index: 0)) else { return }
            case .closed: return
            case .silent: continue
            }
        }
    }

    private enum Outcome {
        case success(String)
        case failure(Failure)
        case closed
        /// Nothing is sent (`noidle` outside `idle`).
        case silent
    }

    /// MPD's error: `ACK [code@index] {command} message`.
    private struct Failure: Error {
        var code: Int
        var command: String
        var message: String
        func line(index: Int) -> String { "ACK [\(code)@\(index)] {\(command)} \(message)\n" }
        static let argument = 2, password = 3, permission = 4, unknown = 5, noExist = 50, system = 52, notPlaying = 55

        /// MPD's answer for a URI that names nothing this client may queue.
        init(_ error: SystemPlayerURIError, command: String) {
            self.command = command
            switch error.kind {
            case .denied: (code, message) = (Failure.permission, "Access denied")
            case .missing: (code, message) = (Failure.system, error.description)
            case .noSuchSong: (code, message) = (Failure.noExist, "No such song")
            }
        }

        init(code: Int, command: String, message: String) {
            self.code = code
            self.command = command
            self.message = message
        }
    }

    /// Commands that only read (the player's state and queue, the library, the catalog): run on
    /// the client's thread, since a search may wait for the network, and so that a status poll
    /// never waits for another client's start.
    private static let lookups: Set<String> = ["find", "search", "count", "list", "lsinfo", "tagtypes", "commands", "decoders", "ping",
                                               "stats", "listplaylists", "status", "currentsong", "playlistinfo",
                                               "playlistid", "plchanges", "outputs", "clearerror", "getvol",
                                               "replay_gain_status"]
    /// Commands that decide themselves whether anything plays: a start they supersede is not
    /// started again after them (`DaemonOperations`).
    private static let startsOrStops: Set<String> = ["play", "playid", "pause", "stop", "clear"]

    private func run(_ line: String, connection: Connection) -> Outcome {
        let words: [String]
        do { words = try Self.split(line) } catch { return .failure(Failure(code: Failure.argument, command: "", message: "\(error)")) }
        guard let command = words.first else { return .failure(Failure(code: Failure.unknown, command: "", message: "No command given")) }
        let args = Array(words.dropFirst())
        if command == "close" { return .closed }
        if command == "idle" { return idle(Set(args), connection: connection) }
        if command == "noidle" { return .silent }  // outside idle, MPD ignores it: no answer
        do {
            if Self.lookups.contains(command) { return .success(try perform(command, args, adding: [])) }
            // Pausing and stopping never wait for another client's command (a play whose first
            // entry is still opening): the player takes them from any thread.
            let pausing = command == "pause" && (args.first == "1" || (args.isEmpty && player.state.playbackStatus == .playing))
            if command == "stop" || pausing { return .success(try perform(command, args, adding: [])) }
            var adding: [PlayResolutionItem] = []
            if command == "add" || command == "addid" {
                guard let uri = args.first else { throw Failure(code: Failure.argument, command: command, message: "missing URI") }
                do throws(SystemPlayerURIError) {
                    // A URI relative to the library's tree, as MPD's are, names a file in it (one
                    // that is not there is MPD's "No such song", as a song not in its database);
                    // an absolute path, `file://` or `musickit:` names none there.
                    let inLibrary = Self.pathInLibrary(uri).flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }
                    let named = inLibrary ?? uri
                    adding = [try SystemPlayerServer.item(forURI: named, within: connection.ownUser ? nil : MusicLibraryScanner.folders)]
                } catch {
                    throw Failure(error, command: command)
                }
            }
            if command == "load" {
                guard let name = args.first else { throw Failure(code: Failure.argument, command: command, message: "missing playlist name") }
                guard let playlist = try libraryPlaylists().first(where: { $0.name == name }) else {
                    throw Failure(code: Failure.noExist, command: command, message: "No such playlist")
                }
                adding = [PlayResolutionItem(item: playlist)]
            }
            if command == "findadd" || command == "searchadd" {
                // Found on this thread (a search may wait for the network); added in the queue.
                adding = try songs(matching: args, exact: command == "findadd", command: command).map { PlayResolutionItem(item: $0) }
            }
            let effect: DaemonOperations.Effect = Self.startsOrStops.contains(command) ? .startsOrStops : .keepsPlaying
            let items = adding
            let output = try operations.perform("MPD \(command)", effect) { try self.perform(command, args, adding: items) }
            return .success(output ?? "")
        } catch let failure as Failure {
            return .failure(failure)
        } catch {
            return .failure(Failure(code: Failure.system, command: command, message: "\(error)"))
        }
    }

    /// Splits a command line: words, or "quoted strings" with backslash escapes.
    static func split(_ line: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        var started = false
        for character in line {
            if escaped { current.append(character); escaped = false; continue }
            if inQuotes {
                if character == "\\" { escaped = true } else if character == "\"" { inQuotes = false } else { current.append(character) }
                continue
            }
            if character == "\"" { inQuotes = true; started = true; continue }
            if character == " " || character == "\t" {
                if started { words.append(current); current = ""; started = false }
                continue
            }
            current.append(character)
            started = true
        }
        if inQuotes { throw SystemPlayerWireError(description: "Invalid unquoted character") }
        if started { words.append(current) }
        return words
    }

    // MARK: - Idle

    /// Answers with what changed in `wanted` (every subsystem when empty) since this client's
    /// last `idle` answered, at once if something did, else when something does or `noidle`
    /// comes. Once it answers, every change is forgotten, the unwanted too (MPD 0.23 does the
    /// same: checked against it).
    private func idle(_ wanted: Set<String>, connection: Connection) -> Outcome {
        let id = connection.idlerID
        /// The changes `wanted` covers, taken (nil when none).
        func take() -> String? {
            state.withLock { state -> String? in
                let changes = state.idlers[id]?.changes ?? []
                let answered = wanted.isEmpty ? changes : changes.intersection(wanted)
                guard !answered.isEmpty else { return nil }
                state.idlers[id]?.changes = []
                return answered.sorted().map { "changed: \($0)\n" }.joined()
            }
        }
        if let answer = take() { return .success(answer) }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            return .failure(Failure(code: Failure.system, command: "idle", message: String(cString: strerror(errno))))
        }
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        for end in pipeEnds {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        state.withLock { $0.idlers[id]?.waiting = (wanted, pipeEnds[1]) }
        // Cleared under the lock before the pipe closes: no wake-up goes to a reused descriptor.
        defer { state.withLock { $0.idlers[id]?.waiting = nil } }
        while true {
            if let answer = take() { return .success(answer) }
            var descriptors = [pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)]
            if !connection.buffer.isEmpty { descriptors[0].revents = Int16(POLLIN) } else { _ = poll(&descriptors, 2, -1) }
            if descriptors[1].revents != 0 { var drain = [UInt8](repeating: 0, count: 64); _ = read(pipeEnds[0], &drain, 64) }
            if descriptors[0].revents != 0 {
                // The only command allowed while idle: noidle (anything else ends the connection).
                guard let line = connection.readLine() else { return .closed }
                guard line.trimmingCharacters(in: .whitespaces) == "noidle" else { return .closed }
                return .success(take() ?? "")
            }
        }
    }

    // MARK: - Commands

    /// Runs one command; `adding` is what `add`/`addid` named, or what `findadd`/`searchadd`
    /// found, already resolved.
    private func perform(_ command: String, _ args: [String], adding: [PlayResolutionItem]) throws -> String {
        func int(_ index: Int) throws -> Int {
            guard index < args.count, let value = Int(args[index]) else {
                throw Failure(code: Failure.argument, command: command, message: "Integer expected: \(index < args.count ? args[index] : "nothing")")
            }
            return value
        }
        func number(_ index: Int) throws -> Double {
            // Finite only: "inf", "nan" and "1e999" are no time.
            guard index < args.count, let value = Double(args[index].trimmingCharacters(in: CharacterSet(charactersIn: "+"))),
                  value.isFinite else {
                throw Failure(code: Failure.argument, command: command, message: "Number expected")
            }
            return value
        }
        func flag(_ index: Int) throws -> Bool {
            guard index < args.count, args[index] == "0" || args[index] == "1" else {
                throw Failure(code: Failure.argument, command: command, message: "Boolean (0/1) expected")
            }
            return args[index] == "1"
        }
        func entries() -> ApplicationMusicPlayer.Queue.Entries { player.queue.entries }
        func position(ofID id: Int) throws -> Int {
            guard let index = entries().firstIndex(where: { Self.songID($0) == id }) else {
                throw Failure(code: Failure.noExist, command: command, message: "No such song")
            }
            return index
        }
        func jump(to index: Int) throws {
            let all = entries()
            guard all.indices.contains(index) else { throw Failure(code: Failure.argument, command: command, message: "Bad song index") }
            player.queue.currentEntry = all[index]
        }
        func playNow() throws { try waitFor { [player] in try await player.play() } }

        switch command {
        case "ping", "clearerror": return ""
        case "status": return status()
        case "currentsong":
            guard let entry = player.queue.currentEntry, let index = entries().firstIndex(of: entry) else { return "" }
            // `arturl`, not an MPD tag (its clients skip it): Snapcast's meta_mpd.py passes it on
            // as the artwork of the rooms' clients, which load it over the network, so only a
            // catalog's http(s) address; without one the script looks on MusicBrainz, as for MPD.
            let art = entry.artworkAddress.flatMap { $0.isFileURL ? nil : "arturl: \($0.absoluteString)\n" }
            return Self.describe(entry, position: index) + (art ?? "")
        case "play":
            if !args.isEmpty { try jump(to: try int(0)) }
            try playNow()
        case "playid":
            if !args.isEmpty { try jump(to: try position(ofID: try int(0))) }
            try playNow()
        case "pause":
            let pausing = args.isEmpty ? player.state.playbackStatus == .playing : try flag(0)
            if pausing { player.pause() } else { try playNow() }
        case "stop": player.stop()
        case "next": player.skipToNextEntryBlocking()
        case "previous": try waitFor { [player] in try await player.skipToPreviousEntry() }
        case "seek", "seekid":
            let index = command == "seek" ? try int(0) : try position(ofID: try int(0))
            let time = try number(1)
            if player.queue.currentEntry != entries()[safe: index] { try jump(to: index) }
            player.playbackTime = time
        case "seekcur":
            guard let text = args.first else { throw Failure(code: Failure.argument, command: command, message: "missing time") }
            let value = try number(0)
            player.playbackTime = text.hasPrefix("+") || text.hasPrefix("-") ? player.playbackTime + value : value
        case "add", "addid":
            guard let item = adding.first else { throw Failure(code: Failure.argument, command: command, message: "missing URI") }
            let count = entries().count
            try waitFor { [player] in try await player.queue.insert(item.item, position: .tail) }
            var all = entries()
            if command == "addid", args.count > 1 {
                let target = min(max(try int(1), 0), count)
                let added = Array(all[count...])
                all.removeSubrange(count...)
                all.insert(contentsOf: added, at: target)
                player.queue.entries = all
                notifyChanged(["playlist"])
                return "Id: \(Self.songID(all[target]))\n"
            }
            notifyChanged(["playlist"])
            return command == "addid" ? "Id: \(all.indices.contains(count) ? Self.songID(all[count]) : 0)\n" : ""
        case "clear":
            player.queue = ApplicationMusicPlayer.Queue(items: [])
            notifyChanged(["playlist", "player"])
            return ""
        case "delete":
            var all = entries()
            let range = try Self.range(args.first, count: all.count, command: command)
            all.removeSubrange(range)
            player.queue.entries = all
            notifyChanged(["playlist"])
            return ""
        case "deleteid":
            var all = entries()
            all.remove(at: try position(ofID: try int(0)))
            player.queue.entries = all
            notifyChanged(["playlist"])
            return ""
        case "move":
            var all = entries()
            let from = try Self.range(args.first, count: all.count, command: command)
            let to = try int(1)
            let moved = Array(all[from])
            all.removeSubrange(from)
            guard to >= 0, to <= all.count else { throw Failure(code: Failure.argument, command: command, message: "Bad song index") }
            all.insert(contentsOf: moved, at: to)
            player.queue.entries = all
            notifyChanged(["playlist"])
            return ""
        case "playlistinfo", "playlistid", "plchanges":
            let all = entries()
            var indices = Array(all.indices)
            if command == "playlistinfo", let text = args.first { indices = Array(try Self.range(text, count: all.count, command: command)) }
            if command == "playlistid", !args.isEmpty { indices = [try position(ofID: try int(0))] }
            if command == "plchanges", try int(0) >= state.withLock({ $0.playlistVersion }) { indices = [] }
            return indices.map { Self.describe(all[$0], position: $0) }.joined()
        case "repeat": Self.setModes(of: player, repeats: try flag(0), single: Self.single(of: player))
        case "single": Self.setModes(of: player, repeats: Self.repeats(player), single: try flag(0))
        case "random": player.state.shuffleMode = try flag(0) ? .songs : .off
        case "consume":
            guard try !flag(0) else { throw Failure(code: Failure.argument, command: command, message: "consume mode is not supported") }
        case "find", "search":
            return try songs(matching: args, exact: command == "find", command: command).map { Self.describe($0.resource) }.joined()
        case "count":
            let found = try songs(matching: args, exact: true, command: command)
            let seconds = found.reduce(0.0) { $0 + ($1.resource.duration() ?? 0) }
            return "songs: \(found.count)\nplaytime: \(seconds.clampedInt(.towardZero))\n"
        case "findadd", "searchadd", "load":
            player.queue.insert(items: adding.map(\.item), position: .tail)
            notifyChanged(["playlist"])
        case "list":
            return try list(args, command: command)
        case "lsinfo":
            return try lsinfo(args.first ?? "", command: command)
        case "setvol":
            try setVolume(args, command: command, relative: false)
            return ""
        case "volume":
            try setVolume(args, command: command, relative: true)
            return ""
        case "replay_gain_mode":
            guard args.count == 1, let mode = ApplicationMusicPlayer.LoudnessMode(rawValue: args[0]) else {
                throw Failure(code: Failure.argument, command: command, message: "Unrecognized replay gain mode")
            }
            player.loudnessMode = mode
            changed()
            notify(["options"])
            return ""
        case "replay_gain_status":
            return "replay_gain_mode: \(player.loudnessMode.rawValue)\n"
        case "getvol":
            return "volume: \(Self.percent(player.volume))\n"
        case "tagtypes": return ["Artist", "AlbumArtist", "Album", "Title", "Track", "Date", "Genre", "Disc"].map { "tagtype: \($0)\n" }.joined()
        case "outputs":
            // The device opened (after a fallback), else the one configured: libpulse's, Snapcast's
            // pipe (MPD's `fifo` plugin feeds Snapcast the same way) or ALSA's.
            let device = player.engineStatistics.deviceName ?? player.engineConfiguration.deviceName
            let plugin = device.hasPrefix("pulseaudio") ? "pulse" : device.hasPrefix("snapcast:") ? "fifo" : "alsa"
            return "outputid: 0\noutputname: \(device)\nplugin: \(plugin)\noutputenabled: 1\n"
        case "stats":
            // What the library and the catalog hold (MPD's database), and the server's uptime.
            let songs = try allSongs()
            var artists = Set<String>()
            var albums = Set<String>()
            var seconds = 0.0
            for song in songs {
                if let artist = song.string("artistName") { artists.insert(artist) }
                if let album = song.string("albumName") { albums.insert(album) }
                seconds += song.duration() ?? 0
            }
            return "artists: \(artists.count)\nalbums: \(albums.count)\nsongs: \(songs.count)\n"
                + "uptime: \(Int(Date().timeIntervalSince(started)))\ndb_playtime: \(seconds.clampedInt())\n"
        case "listplaylists":
            // The library's playlists (MPD's stored playlists); `load NAME` queues one.
            let formatter = ISO8601DateFormatter()
            return try libraryPlaylists().map { playlist in
                "playlist: \(Self.oneLine(playlist.name))\n"
                    + (playlist.lastModifiedDate.map { "Last-Modified: \(formatter.string(from: $0))\n" } ?? "")
            }.joined()
        case "decoders":
            // One plugin, the engine's decoder (libsndfile and FFmpeg behind it), with the file
            // suffixes it opens: ncmpcpp asks at every connection and reconnects on an ACK.
            return "plugin: musickit\n" + AudioFileDecoder.fileExtensions.sorted().map { "suffix: \($0)\n" }.joined()
        case "commands":
            return ["add", "addid", "clear", "close", "command_list_begin", "command_list_end", "command_list_ok_begin", "commands",
                    "consume", "count", "currentsong", "decoders", "delete", "deleteid", "find", "listplaylists", "load", "stats", "findadd", "getvol", "idle", "list", "lsinfo", "move", "next",
                    "noidle", "outputs", "pause", "ping", "play", "playid", "playlistid", "playlistinfo", "plchanges", "previous",
                    "random", "repeat", "replay_gain_mode", "replay_gain_status", "search", "searchadd", "seek", "seekcur", "seekid", "setvol",
                    "single", "status", "stop", "tagtypes", "volume"].map { "command: \($0)\n" }.joined()
        default:
            throw Failure(code: Failure.unknown, command: command, message: "unknown command \"\(command)\"")
        }
        notifyChanged(["repeat", "single", "random", "consume"].contains(command) ? ["options"] : ["player"])
        return ""
    }

    /// The player's volume (0...1) as MPD's whole percent.
    static func percent(_ volume: Double) -> Int { Int((volume * 100).rounded()) }

    /// `setvol N` (0–100) or `volume ±N` (a change, which MPD 0.23 still serves): the player's
    /// volume, heard at once (`ApplicationMusicPlayer.volume`); idle clients hear `mixer`.
    private func setVolume(_ args: [String], command: String, relative: Bool) throws {
        guard args.count == 1, let value = Int(args[0]), relative || (0...100).contains(value) else {
            throw Failure(code: Failure.argument, command: command,
                          message: relative ? "Integer expected" : "Invalid volume value")
        }
        let percent = min(max(relative ? Self.percent(player.volume) + value : value, 0), 100)
        player.volume = Double(percent) / 100
        changed()
        notify(["mixer"])
    }

    private func notifyChanged(_ subsystems: Set<String>) {
        changed()
        notify(subsystems)
    }

    /// MPD's `repeat` and `single`, each on or off by itself, in the player's modes: both on
    /// repeat the song (`.one`); `repeat` alone the queue (`.all`); `single` alone pauses after
    /// each song, at the start of the next (`pausesAfterEachEntry`), as MPD 0.23 does.
    static func setModes(of player: ApplicationMusicPlayer, repeats: Bool, single: Bool) {
        player.pausesAfterEachEntry = single && !repeats
        player.state.repeatMode = repeats ? (single ? .one : .all) : MusicPlayer.RepeatMode.none
    }

    static func repeats(_ player: ApplicationMusicPlayer) -> Bool {
        (player.state.repeatMode ?? MusicPlayer.RepeatMode.none) != MusicPlayer.RepeatMode.none
    }

    static func single(of player: ApplicationMusicPlayer) -> Bool {
        player.state.repeatMode == .one || player.pausesAfterEachEntry
    }

    private func status() -> String {
        let state = player.state
        let all = player.queue.entries
        var lines = [
            "volume: \(Self.percent(player.volume))",
            "repeat: \(Self.repeats(player) ? 1 : 0)",
            "random: \(state.shuffleMode == .songs ? 1 : 0)",
            "single: \(Self.single(of: player) ? 1 : 0)",
            "consume: 0",
            "playlist: \(self.state.withLock { $0.playlistVersion })",
            "playlistlength: \(all.count)",
        ]
        let playing: String = switch state.playbackStatus {
        case .playing, .seekingForward, .seekingBackward: "play"
        case .paused: "pause"
        case .stopped, .interrupted: "stop"
        }
        lines.append("state: \(playing)")
        if let entry = player.queue.currentEntry, let index = all.firstIndex(of: entry) {
            lines.append("song: \(index)")
            lines.append("songid: \(Self.songID(entry))")
            let elapsed = player.playbackTime
            lines.append("elapsed: \(String(format: "%.3f", elapsed))")
            if let duration = entry.itemDuration {
                lines.append("time: \(elapsed.clampedInt(.towardZero)):\(duration.clampedInt())")
                lines.append("duration: \(String(format: "%.3f", duration))")
            }
            if all.indices.contains(index + 1) {
                lines.append("nextsong: \(index + 1)")
                lines.append("nextsongid: \(Self.songID(all[index + 1]))")
            }
        }
        if let device = player.engineStatistics.device, playing != "stop" {
            lines.append("audio: \(device.sampleRate):16:\(device.channelCount)")
        }
        return lines.map { $0 + "\n" }.joined()
    }

    // MARK: - Songs

    /// An entry's MPD song ID: its serial number.
    static func songID(_ entry: MusicPlayer.Queue.Entry) -> Int { Int(entry.serial) }

    static func describe(_ entry: MusicPlayer.Queue.Entry, position: Int) -> String {
        describe(entry.resource) + "Pos: \(position)\nId: \(songID(entry))\n"
    }

    /// A song's lines: file, Title, Artist, Album, Genre, Track, Disc, Date, Time/duration.
    static func describe(_ resource: ResourceObject) -> String {
        var lines = ["file: \(resource.string("filePath") ?? "musickit:\(resource.id)")"]
        if let title = resource.string("name") { lines.append("Title: \(title)") }
        if let artist = resource.string("artistName") { lines.append("Artist: \(artist)") }
        if let album = resource.string("albumName") { lines.append("Album: \(album)") }
        if let albumArtist = resource.string(LibraryAttributes.albumArtist) { lines.append("AlbumArtist: \(albumArtist)") }
        if let genre = resource.strings("genreNames")?.first { lines.append("Genre: \(genre)") }
        if let track = resource.int("trackNumber") { lines.append("Track: \(track)") }
        if let disc = resource.int("discNumber") { lines.append("Disc: \(disc)") }
        if let date = resource.string("releaseDate") { lines.append("Date: \(date)") }
        if let duration = resource.duration() {
            lines.append("Time: \(duration.clampedInt())")
            lines.append("duration: \(String(format: "%.3f", duration))")
        }
        return lines.map { Self.oneLine($0) + "\n" }.joined()
    }

    /// A value on one line (a newline in a tag would end the response early).
    private static func oneLine(_ text: String) -> String {
        text.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: " ")
    }

    /// `POS` or `START:END` (END may be left out: to the end).
    private static func range(_ text: String?, count: Int, command: String) throws -> Range<Int> {
        guard let text else { throw Failure(code: Failure.argument, command: command, message: "missing position") }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        // Positions are 32-bit, as MPD's: a larger one is refused before any arithmetic on it.
        if parts.prefix(2).contains(where: { ($0.count > 10 || (Int($0) ?? 0) > Int(Int32.max)) && $0.allSatisfy(\.isNumber) }) {
            throw Failure(code: Failure.argument, command: command, message: "Number too large: \(text)")
        }
        guard let start = Int(parts[0]), start >= 0 else { throw Failure(code: Failure.argument, command: command, message: "Bad song index") }
        let end = parts.count > 1 ? (parts[1].isEmpty ? count : Int(parts[1]) ?? -1) : start + 1
        guard end >= start, end <= count, start < count || (start == end && start == count) else {
            throw Failure(code: Failure.argument, command: command, message: "Bad song index")
        }
        return start..<end
    }

    /// MPD's tags in filters, and the attributes they read. `AlbumArtist` is the file's album
    /// artist, else the artist, as MPD's own fallback (`albumArtistOrArtist`).
    private static let filterKeys: [String: [String]] = [
        "title": ["name"], "artist": ["artistName"], "albumartist": [albumArtistOrArtist], "album": ["albumName"],
        "genre": ["genreNames"], "date": ["releaseDate"], "track": ["trackNumber"], "disc": ["discNumber"],
        "file": ["filePath"], "any": ["name", "artistName", "albumName"],
    ]

    /// The tags whose words the library's and the catalog's searches look in.
    private static let searchedTags: Set<String> = ["title", "artist", "albumartist", "album", "any"]

    /// Legacy TYPE VALUE pairs (what mpc and libmpdclient send); MPD's `(TAG == 'VALUE')`
    /// expressions are refused with MPD's ACK.
    private static func filterPairs(_ args: ArraySlice<String>, command: String) throws -> [(tag: String, value: String)] {
        if args.first?.hasPrefix("(") == true {
            throw Failure(code: Failure.argument, command: command, message: "filter expressions are not supported; give TYPE VALUE pairs")
        }
        guard args.count % 2 == 0 else { throw Failure(code: Failure.argument, command: command, message: "Incorrect number of filter arguments") }
        let pairs = stride(from: args.startIndex, to: args.endIndex, by: 2).map { (tag: args[$0].lowercased(), value: args[$0 + 1]) }
        for pair in pairs where filterKeys[pair.tag] == nil {
            throw Failure(code: Failure.argument, command: command, message: "Unknown tag type: \(pair.tag)")
        }
        return pairs
    }

    /// The key `values(of:in:)` reads as the album artist, or the artist where there is none.
    private static let albumArtistOrArtist = "albumArtistOrArtist"

    /// A tag's values in a song, as text.
    private static func values(of key: String, in song: ResourceObject) -> [String] {
        if key == albumArtistOrArtist {
            return values(of: song.string(LibraryAttributes.albumArtist) != nil ? LibraryAttributes.albumArtist : "artistName", in: song)
        }
        if let texts = song.strings(key) { return texts }
        if let text = song.string(key) { return [text] }
        if let number = song.int(key) { return [String(number)] }
        return []
    }

    /// Whether `song` matches every pair: equal to the value (`find`) or containing it
    /// (`search`), case and accents folded (MPD's `find` folds neither).
    private static func matches(_ song: ResourceObject, _ pairs: [(tag: String, value: String)], exact: Bool) -> Bool {
        pairs.allSatisfy { tag, value in
            let wanted = value.foldedForSearch
            // `find TAG ""` is a song without that tag, as in MPD (ncmpcpp asks `Date ""` for an
            // album without a date).
            if exact && wanted.isEmpty { return filterKeys[tag]!.allSatisfy { values(of: $0, in: song).isEmpty } }
            return filterKeys[tag]!.contains { key in
                values(of: key, in: song).contains { exact ? $0.foldedForSearch == wanted : $0.foldedForSearch.contains(wanted) }
            }
        }
    }

    /// Songs of the library and the catalog whose tags contain (`search`) or equal (`find`) the
    /// values; pairs of TYPE VALUE, all must match; in MPD's database order.
    private func songs(matching args: [String], exact: Bool, command: String) throws -> [Song] {
        guard !args.isEmpty else { throw Failure(code: Failure.argument, command: command, message: "Incorrect number of filter arguments") }
        let pairs = try Self.filterPairs(args[...], command: command)
        // The searches find songs by words of their names; a track, disc, date, genre or file
        // filter is applied to what they find (alone, to the whole library): `find album X
        // track 2` found nothing when "X 2" was searched for.
        let term = pairs.filter { Self.searchedTags.contains($0.tag) }.map(\.value).joined(separator: " ")
        let found = term.isEmpty ? try librarySongs() : try waitFor { () -> [Song] in
            var found: [Song] = []
            if let library = try? await MusicLibrarySearchRequest(term: term, types: [Song.self]).response() {
                found += library.songs
            }
            var catalog = MusicCatalogSearchRequest(term: term, types: [Song.self])
            catalog.limit = 50
            if let response = try? await catalog.response() { found += response.songs }
            return found
        }
        var seen = Set<String>()
        let matching = found.filter { Self.matches($0.resource, pairs, exact: exact) && seen.insert($0.id.rawValue).inserted }
        return Song.inLibraryOrder(matching)
    }

    /// The library's playlists.
    private func libraryPlaylists() throws -> [Playlist] {
        try waitFor { Array(try await MusicLibraryRequest<Playlist>().response().items) }
    }

    /// The library's songs (none when it cannot be read).
    private func librarySongs() throws -> [Song] {
        try waitFor { (try? await MusicLibraryRequest<Song>().response().items).map(Array.init) ?? [] }
    }

    /// Every song of the library and the catalog.
    private func allSongs() throws -> [ResourceObject] {
        let library = try librarySongs().map(\.resource)
        return library + (try waitFor {
            let service = try await MusicCatalogService.current()
            return try service.allResources(type: "songs", account: service.account, limit: 10_000, offset: 0).items
        })
    }

    /// The distinct values of a tag over the library and the catalog: `list TAG [FILTER…]
    /// [group TAG]`, and MPD's older `list album ARTIST`. With `group`, each group's value is
    /// named before the values in it, as MPD 0.23 answers.
    private func list(_ args: [String], command: String) throws -> String {
        guard let tag = args.first?.lowercased() else { throw Failure(code: Failure.argument, command: command, message: "missing tag type") }
        guard tag != "any", tag != "file", let key = Self.filterKeys[tag]?.first else {
            throw Failure(code: Failure.argument, command: command, message: "Unknown tag type: \(tag)")
        }
        var rest = args.dropFirst()
        var group: (tag: String, key: String)?
        if let index = rest.firstIndex(where: { $0.lowercased() == "group" }) {
            guard index + 1 < rest.endIndex, let groupKey = Self.filterKeys[rest[index + 1].lowercased()]?.first else {
                throw Failure(code: Failure.argument, command: command, message: "Unknown tag type in group")
            }
            group = (rest[index + 1].lowercased(), groupKey)
            rest = rest[rest.startIndex..<index] + rest[(index + 2)...]
        }
        let pairs: [(tag: String, value: String)]
        if tag == "album", rest.count == 1, let artist = rest.first {
            pairs = [("artist", artist)]  // MPD's `list album ARTIST`
        } else {
            pairs = try Self.filterPairs(rest, command: command)
        }
        let songs = try allSongs().filter { Self.matches($0, pairs, exact: true) }
        func label(_ tag: String) -> String {
            ["albumartist": "AlbumArtist", "date": "Date", "track": "Track", "disc": "Disc"][tag] ?? tag.prefix(1).uppercased() + tag.dropFirst()
        }
        func distinct(_ songs: [ResourceObject], _ key: String) -> [String] {
            var seen = Set<String>()
            return songs.flatMap { Self.values(of: key, in: $0) }.filter { seen.insert($0).inserted }
                .sorted { $0.localizedStandardCompare($1) == .orderedAscending }
        }
        guard let group else { return distinct(songs, key).map { "\(label(tag)): \(Self.oneLine($0))\n" }.joined() }
        var out = ""
        for value in distinct(songs, group.key) {
            let inGroup = songs.filter { Self.values(of: group.key, in: $0).contains(value) }
            out += "\(label(group.tag)): \(Self.oneLine(value))\n"
            out += distinct(inGroup, key).map { "\(label(tag)): \(Self.oneLine($0))\n" }.joined()
        }
        return out
    }

    /// The library's folders as the roots of MPD's directory tree: each folder's path and its
    /// name there (its last path component, numbered when two share one).
    private static func libraryRoots() -> [(name: String, path: String)] {
        var roots: [(name: String, path: String)] = []
        for folder in MusicLibraryScanner.folders.map({ $0.standardizedFileURL.path }) {
            let base = (folder as NSString).lastPathComponent
            var name = base
            var number = 2
            while roots.contains(where: { $0.name == name }) { name = "\(base) \(number)"; number += 1 }
            roots.append((name, folder))
        }
        return roots
    }

    /// The path on disk of a URI relative to that tree — a folder (`lsinfo`) or a song (MPD's
    /// song URIs: `Artist/Album/01.flac`); "" is the root when there is one folder. Nil when it
    /// names no place in it: an absolute path, "." or "..", a root that is not there.
    private static func pathInLibrary(_ uri: String, roots: [(name: String, path: String)] = libraryRoots()) -> String? {
        guard !uri.hasPrefix("/") else { return nil }
        let relative = uri.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let parts = relative.isEmpty ? [] : relative.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !parts.contains(where: { $0 == ".." || $0 == "." }) else { return nil }
        if roots.count == 1 { return ([roots[0].path] + parts).joined(separator: "/") }
        guard let name = parts.first, let root = roots.first(where: { $0.name == name }) else { return nil }
        return ([root.path] + parts.dropFirst()).joined(separator: "/")
    }

    /// The library's folders as MPD's directory tree (`lsinfo [URI]`). Directory URIs are
    /// relative, as MPD's clients require (libmpdclient refuses a directory starting with `/`):
    /// with one library folder its contents are the root, as MPD's music directory is; with
    /// several, the root names each by its last path component. Songs keep their absolute
    /// `file:` paths, which `add` takes.
    private func lsinfo(_ uri: String, command: String) throws -> String {
        let roots = Self.libraryRoots()
        let relative = uri.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if relative.isEmpty && roots.count != 1 {
            return roots.map { "directory: \(Self.oneLine($0.name))\n" }.joined()
        }
        let noSuchDirectory = Failure(code: Failure.noExist, command: command, message: "No such directory")
        // The folder on disk, and the URI prefix of what is in it.
        guard let folder = Self.pathInLibrary(uri, roots: roots) else { throw noSuchDirectory }
        let prefix = relative.isEmpty ? "" : relative + "/"
        let songs = try librarySongs().filter { $0.filePath?.hasPrefix(folder + "/") == true }
        var directories = Set<String>()
        var files: [Song] = []
        for song in songs {
            guard let path = song.filePath else { continue }
            let inside = path.dropFirst(folder.count + 1)
            if let slash = inside.firstIndex(of: "/") {
                directories.insert(prefix + inside[..<slash])
            } else {
                files.append(song)
            }
        }
        if directories.isEmpty && files.isEmpty && !relative.isEmpty { throw noSuchDirectory }
        return directories.sorted { $0.localizedStandardCompare($1) == .orderedAscending }.map { "directory: \(Self.oneLine($0))\n" }.joined()
            + Song.inLibraryOrder(files).map { Self.describe($0.resource) }.joined()
    }
}

private extension Collection {
    subscript(safe index: Index) -> Element? { indices.contains(index) ? self[index] : nil }
}
