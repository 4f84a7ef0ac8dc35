import PlatformSupport
import Foundation
import Glibc
import MusicKitCore

/// MPRIS 2 on the session bus (`org.mpris.MediaPlayer2.musickit`), served by musickitd, so that
/// the desktop's media keys, its panels and `playerctl` drive the system player.
///
/// Served at `/org/mpris/MediaPlayer2`: the root interface (`Quit`, `Raise`; `Identity`,
/// `CanQuit`, `SupportedUriSchemes`…) and the Player interface (`Play`, `Pause`, `PlayPause`,
/// `Stop`, `Next`, `Previous`, `Seek`, `SetPosition`, `OpenUri` for files and `musickit:` IDs;
/// `PlaybackStatus`, `LoopStatus`, `Shuffle`, `Rate`, `Metadata`, `Position`, `CanGoNext`…).
/// `PropertiesChanged` is emitted when the daemon reports a change (a start is reported when
/// it is heard), `Seeked` when the position jumps. `Volume` (0–1, read and write) is the
/// player's (`ApplicationMusicPlayer.volume`: the stream's volume at the sound server). Not
/// served: the TrackList and Playlists interfaces, rates other than 1.
///
/// When a second daemon (another runtime folder) already has the name, this one takes
/// `org.mpris.MediaPlayer2.musickit.instance<pid>`, as the specification says.
final class MPRISServer: @unchecked Sendable {
    // @unchecked: the bus and `lastSent`/`lastPosition` are used on the bus thread only; `wake`
    // is written from any thread.
    static let objectPath = "/org/mpris/MediaPlayer2"
    static let busName = "org.mpris.MediaPlayer2.musickit"
    private static let rootInterface = "org.mpris.MediaPlayer2"
    private static let playerInterface = "org.mpris.MediaPlayer2.Player"
    private static let propertiesInterface = "org.freedesktop.DBus.Properties"
    private static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"

    private let player: ApplicationMusicPlayer
    private let operations: DaemonOperations
    /// Called after a method changed something, with MPD's subsystems for it.
    private let changed: @Sendable (Set<String>) -> Void
    private let quit: @Sendable () -> Void
    private let log: @Sendable (String) -> Void
    private var wakeRead: Int32 = -1
    private var wakeWrite: Int32 = -1
    /// The Player properties last announced (bus thread).
    private var lastSent: [String: DBusValue] = [:]
    /// Where the position was at the last change, to see a jump (bus thread).
    private var lastPosition: (entry: String?, seconds: Double, uptime: Double, moving: Bool)?

    init(player: ApplicationMusicPlayer, operations: DaemonOperations,
         changed: @escaping @Sendable (Set<String>) -> Void,
         quit: @escaping @Sendable () -> Void,
         log: @escaping @Sendable (String) -> Void) {
        self.player = player
        self.operations = operations
        self.changed = changed
        self.quit = quit
        self.log = log
    }

    /// Connects to the session bus on a thread of its own and serves there. Without a session
    /// bus the daemon goes on without MPRIS (and says so in its log).
    func start() {
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else {
            log("MPRIS not offered: pipe: \(String(cString: strerror(errno)))")
            return
        }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        (wakeRead, wakeWrite) = (descriptors[0], descriptors[1])
        PlatformThread.detached(name: "musickitd.mpris") { [self] in
            let connection: DBusConnection
            let name: String
            do throws(DBusError) {
                connection = try DBusConnection()
                try connection.addObject(path: Self.objectPath) { [self] call in reply(to: call, on: connection) }
                let instance = "\(Self.busName).instance\(getpid())"
                name = try connection.requestName(Self.busName) ? Self.busName
                    : try connection.requestName(instance) ? instance : "(no name)"
            } catch {
                log("MPRIS not offered: \(error)")
                return
            }
            log("MPRIS: \(name) on the session bus")
            lastSent = playerProperties()
            let failure = connection.serve(wake: wakeRead) { announceChanges(on: connection) }
            log("MPRIS stopped: \(failure)")
        }
    }

    /// Something changed: the bus thread compares the properties and emits what differs.
    func notify() {
        guard wakeWrite >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)  // a full pipe already wakes the thread
    }

    // MARK: - Properties

    private func rootProperties() -> [String: DBusValue] {
        [
            "CanQuit": .boolean(true),
            "CanRaise": .boolean(false),
            "CanSetFullscreen": .boolean(false),
            "Fullscreen": .boolean(false),
            "HasTrackList": .boolean(false),
            "Identity": .string("OpenMusicKit"),
            "DesktopEntry": .string("musickit"),
            "SupportedUriSchemes": .strings(["file", "musickit"]),
            "SupportedMimeTypes": .strings(["audio/flac", "audio/x-flac", "audio/ogg", "audio/x-vorbis+ogg", "audio/opus",
                                            "audio/mpeg", "audio/wav", "audio/x-wav", "audio/aiff", "audio/x-aiff"]),
        ]
    }

    private func playerProperties() -> [String: DBusValue] {
        let state = player.state
        let (contents, currentID) = player.queue.snapshot
        let index = currentID.flatMap { contents.index(ofEntryID: $0) }
        let hasEntry = index != nil
        let properties: [String: DBusValue] = [
            "PlaybackStatus": .string(Self.status(state.playbackStatus)),
            "LoopStatus": .string(Self.loopStatus(state.repeatMode ?? .none)),
            "Shuffle": .boolean(state.shuffleMode == .songs),
            "Rate": .double(1),
            "Volume": .double(player.volume),
            "MinimumRate": .double(1),
            "MaximumRate": .double(1),
            "Metadata": .dictionary(metadata()),
            "Position": .int64(Self.microseconds(player.playbackTime)),
            "CanGoNext": .boolean(index.map { $0 + 1 < contents.count || state.repeatMode == .all } ?? false),
            "CanGoPrevious": .boolean(hasEntry),
            "CanPlay": .boolean(hasEntry),
            "CanPause": .boolean(hasEntry),
            "CanSeek": .boolean(hasEntry),
            "CanControl": .boolean(true),
        ]
        return properties
    }

    /// The current entry's `Metadata`: trackid, title, artist, album, genre, track number,
    /// length, url and artUrl.
    private func metadata() -> [String: DBusValue] {
        guard let entry = player.queue.currentEntry else { return ["mpris:trackid": .objectPath(Self.noTrack)] }
        let resource = entry.resource
        var metadata: [String: DBusValue] = [
            "mpris:trackid": .objectPath(Self.trackID(entry)),
            "xesam:title": .string(resource.string("name") ?? entry.title),
        ]
        if let artist = resource.string("artistName") { metadata["xesam:artist"] = .strings([artist]) }
        if let album = resource.string("albumName") { metadata["xesam:album"] = .string(album) }
        if let genres = resource.strings("genreNames"), !genres.isEmpty { metadata["xesam:genre"] = .strings(genres) }
        if let track = resource.int("trackNumber") { metadata["xesam:trackNumber"] = .int32(Int32(clamping: track)) }
        if let duration = resource.duration() { metadata["mpris:length"] = .int64(Self.microseconds(duration)) }
        if let path = resource.string("filePath") {
            metadata["xesam:url"] = .string(URL(fileURLWithPath: path).absoluteString)
        } else {
            metadata["xesam:url"] = .string("musickit:\(resource.id)")
        }
        if let art = entry.artworkAddress { metadata["mpris:artUrl"] = .string(art.absoluteString) }
        return metadata
    }

    private static func trackID(_ entry: MusicPlayer.Queue.Entry) -> String { "/org/musickit/track/\(entry.serial)" }

    private static func microseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1_000_000).clampedInt()) }

    private static func status(_ status: MusicPlayer.PlaybackStatus) -> String {
        switch status {
        case .playing, .seekingForward, .seekingBackward: "Playing"
        case .paused: "Paused"
        case .stopped, .interrupted: "Stopped"
        }
    }

    private static func loopStatus(_ mode: MusicPlayer.RepeatMode) -> String {
        switch mode { case .none: "None"; case .one: "Track"; case .all: "Playlist" }
    }

    /// Emits `PropertiesChanged` with the Player properties that differ from the last ones
    /// sent (`Position` is never in it, as the specification says), and `Seeked` when the
    /// position is not where playing on from the last change would have put it.
    private func announceChanges(on connection: DBusConnection) {
        var properties = playerProperties()
        let position = Double(properties["Position"]?.int64 ?? 0) / 1_000_000
        let entry = player.queue.currentEntryID
        let now = ProcessInfo.processInfo.systemUptime
        let moving = player.state.playbackStatus == .playing
        if let last = lastPosition, last.entry == entry {
            let expected = last.seconds + (last.moving ? now - last.uptime : 0)
            if abs(position - expected) > 0.5 { emitSeeked(position, on: connection) }
        }
        lastPosition = (entry, position, now, moving)
        properties["Position"] = nil
        let changes = properties.filter { lastSent[$0.key] != $0.value }
        lastSent = properties
        guard !changes.isEmpty else { return }
        do throws(DBusError) {
            try connection.emitSignal(path: Self.objectPath, interface: Self.propertiesInterface, member: "PropertiesChanged",
                                      arguments: [.string(Self.playerInterface), .dictionary(changes), .strings([])])
        } catch {
            log("MPRIS: \(error)")
        }
    }

    private func emitSeeked(_ seconds: Double, on connection: DBusConnection) {
        do throws(DBusError) {
            try connection.emitSignal(path: Self.objectPath, interface: Self.playerInterface, member: "Seeked",
                                      arguments: [.int64(Self.microseconds(seconds))])
        } catch {
            log("MPRIS: \(error)")
        }
    }

    // MARK: - Calls

    private func reply(to call: DBusMethodCall, on connection: DBusConnection) -> DBusReply {
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return .values([.string(introspection())])
        case (Self.propertiesInterface, "GetAll"):
            guard let interface = call.arguments.first?.string else { return Self.invalidArguments("GetAll needs an interface") }
            switch interface {
            case Self.rootInterface: return .values([.dictionary(rootProperties())])
            case Self.playerInterface: return .values([.dictionary(playerProperties())])
            default: return .values([.dictionary([:])])
            }
        case (Self.propertiesInterface, "Get"):
            guard call.arguments.count == 2, let interface = call.arguments[0].string, let name = call.arguments[1].string else {
                return Self.invalidArguments("Get needs an interface and a property")
            }
            let all = interface == Self.rootInterface ? rootProperties() : interface == Self.playerInterface ? playerProperties() : [:]
            guard let value = all[name] else {
                return .error(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name) on \(interface)")
            }
            return .values([.variant(value)])
        case (Self.propertiesInterface, "Set"):
            guard call.arguments.count == 3, let name = call.arguments[1].string else {
                return Self.invalidArguments("Set needs an interface, a property and a value")
            }
            return set(name, to: call.arguments[2], on: connection)
        case (Self.rootInterface, "Raise"):
            return .values([])  // CanRaise is false: nothing to raise
        case (Self.rootInterface, "Quit"):
            DispatchQueue.global().async { [quit] in quit() }
            return .values([])
        case (Self.playerInterface, let member):
            return control(member, call.arguments, on: connection)
        default:
            return .unknown
        }
    }

    /// How long a call waits for its work on the operations queue before it is answered. The bus
    /// thread serves every MPRIS call in turn: a play whose first entry opens slowly (another
    /// client's, or this one's) must not hold it, or a `Pause` sent behind it would wait too.
    static let replyWaitSeconds = 0.5

    /// Runs `work` on the daemon's operations queue and waits for it `replyWaitSeconds` at most:
    /// its result, or nil when it is still running (it goes on; a failure it meets later is
    /// logged) or was a start superseded by a later request.
    private func onOperations<T: Sendable>(_ what: String, _ effect: DaemonOperations.Effect = .keepsPlaying,
                                           _ work: @escaping @Sendable () throws -> T) throws -> T? {
        try operations.perform("MPRIS \(what)", effect, waitingAtMost: Self.replyWaitSeconds, work)
    }

    /// The Player's methods, each on the daemon's operations queue like every other client's
    /// (waited for `replyWaitSeconds` at most), but `Pause` and `Stop`, which the player takes
    /// from any thread: they never wait for another client's play.
    private func control(_ member: String, _ arguments: [DBusValue], on connection: DBusConnection) -> DBusReply {
        let player = self.player
        do {
            switch member {
            case "Play":
                try onOperations("Play", .startsOrStops) { try waitFor { try await player.play() } }
            case "Pause":
                player.pause()
            case "PlayPause":
                if player.state.playbackStatus == .playing {
                    player.pause()
                } else {
                    try onOperations("PlayPause", .startsOrStops) { try waitFor { try await player.play() } }
                }
            case "Stop":
                player.stop()
            case "Next":
                try onOperations("Next") { player.skipToNextEntryBlocking() }
            case "Previous":
                try onOperations("Previous") { try waitFor { try await player.skipToPreviousEntry() } }
            case "Seek":
                guard let offset = arguments.first?.int64 else { return Self.invalidArguments("Seek needs an offset in microseconds") }
                let target = try onOperations("Seek") { () -> Double? in
                    let target = max(0, player.playbackTime + Double(offset) / 1_000_000)
                    if let length = player.queue.currentEntry?.resource.duration(), target > length {
                        player.skipToNextEntryBlocking()  // past the end: the next track, as the specification says
                        return nil
                    }
                    player.playbackTime = target
                    return target
                }
                if let target = target ?? nil { seeked(to: target, on: connection) }
            case "SetPosition":
                guard arguments.count == 2, let track = arguments[0].string, let position = arguments[1].int64 else {
                    return Self.invalidArguments("SetPosition needs a track ID and a position in microseconds")
                }
                let target = Double(position) / 1_000_000
                let moved = try onOperations("SetPosition") { () -> Bool in
                    guard let entry = player.queue.currentEntry, Self.trackID(entry) == track, target >= 0,
                          target <= entry.resource.duration() ?? .infinity else { return false }  // ignored, as specified
                    player.playbackTime = target
                    return true
                }
                if moved == true { seeked(to: target, on: connection) }
            case "OpenUri":
                guard let uri = arguments.first?.string else { return Self.invalidArguments("OpenUri needs a URI") }
                let item = try SystemPlayerServer.item(forURI: uri)  // outside the operations queue: it may block
                try onOperations("OpenUri", .startsOrStops) {
                    // After the current entry, then to it: the rest of the queue stays.
                    let before = player.queue.entries
                    try waitFor { try await player.queue.insert(item.item, position: .afterCurrentEntry) }
                    let added = player.queue.entries.first { !before.contains($0) }
                    if let added { player.queue.currentEntry = added }
                    try waitFor { try await player.play() }
                }
                changed(["playlist", "player"])
                return .values([])
            default:
                return .unknown
            }
        } catch {
            changed(["player"])
            return .error(name: "org.mpris.MediaPlayer2.musickit.Error.Failed", message: "\(error)")
        }
        changed(["player"])
        return .values([])
    }

    private func set(_ name: String, to value: DBusValue, on connection: DBusConnection) -> DBusReply {
        let player = self.player
        switch name {
        case "LoopStatus":
            let mode: MusicPlayer.RepeatMode
            switch value.string {
            case "None": mode = .none
            case "Track": mode = .one
            case "Playlist": mode = .all
            default: return Self.invalidArguments("LoopStatus is None, Track or Playlist")
            }
            _ = try? onOperations("LoopStatus") { player.state.repeatMode = mode }
            changed(["options"])
        case "Shuffle":
            guard let shuffle = value.boolean else { return Self.invalidArguments("Shuffle is a boolean") }
            _ = try? onOperations("Shuffle") { player.state.shuffleMode = shuffle ? .songs : .off }
            changed(["options"])
        case "Rate":
            guard let rate = value.double else { return Self.invalidArguments("Rate is a double") }
            if rate == 0 {
                player.pause()  // a rate of 0 pauses, as the specification says
                changed(["player"])
            } else if rate != 1 {
                return Self.invalidArguments("only a rate of 1 is supported (MinimumRate = MaximumRate = 1)")
            }
        case "Volume":
            // Below 0 is 0, as the specification says; above 1 is 1 (the player clamps: it does not amplify).
            guard let volume = value.double, !volume.isNaN else { return Self.invalidArguments("Volume is a double") }
            _ = try? onOperations("Volume") { player.volume = volume }
            changed(["mixer"])
        case "Fullscreen":
            return .error(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "Fullscreen cannot be set (CanSetFullscreen is false)")
        default:
            return .error(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "\(name) cannot be set")
        }
        return .values([])
    }

    /// A seek this interface made: announced once the player has the new position.
    private func seeked(to seconds: Double, on connection: DBusConnection) {
        emitSeeked(seconds, on: connection)
        lastPosition = (player.queue.currentEntryID, seconds, ProcessInfo.processInfo.systemUptime,
                        player.state.playbackStatus == .playing)
    }

    private static func invalidArguments(_ message: String) -> DBusReply {
        .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message)
    }

    /// Properties a client may set (the others are read-only).
    private static let writableProperties: Set<String> = ["LoopStatus", "Rate", "Shuffle", "Volume"]

    /// The object's introspection XML; the properties' names and types come from the values
    /// served, so the two cannot differ.
    private func introspection() -> String {
        func properties(_ values: [String: DBusValue]) -> String {
            values.sorted { $0.key < $1.key }.map { name, value in
                let access = Self.writableProperties.contains(name) ? "readwrite" : "read"
                return "    <property name=\"\(name)\" type=\"\(value.signature)\" access=\"\(access)\"/>\n"
            }.joined()
        }
        return """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get"><arg name="interface" type="s" direction="in"/><arg name="name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
            <method name="GetAll"><arg name="interface" type="s" direction="in"/><arg name="properties" type="a{sv}" direction="out"/></method>
            <method name="Set"><arg name="interface" type="s" direction="in"/><arg name="name" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
            <signal name="PropertiesChanged"><arg name="interface" type="s"/><arg name="changed" type="a{sv}"/><arg name="invalidated" type="as"/></signal>
          </interface>
          <interface name="\(Self.rootInterface)">
            <method name="Raise"/>
            <method name="Quit"/>
        \(properties(rootProperties()))  </interface>
          <interface name="\(Self.playerInterface)">
            <method name="Next"/>
            <method name="Previous"/>
            <method name="Pause"/>
            <method name="PlayPause"/>
            <method name="Stop"/>
            <method name="Play"/>
            <method name="Seek"><arg name="Offset" type="x" direction="in"/></method>
            <method name="SetPosition"><arg name="TrackId" type="o" direction="in"/><arg name="Position" type="x" direction="in"/></method>
            <method name="OpenUri"><arg name="Uri" type="s" direction="in"/></method>
            <signal name="Seeked"><arg name="Position" type="x"/></signal>
        \(properties(playerProperties()))  </interface>
        </node>
        """
    }
}

extension MusicPlayer.Queue.Entry {
    /// Where another program can load the entry's artwork at 600×600: a file of the artwork
    /// cache (a bundled image is a PNG of that size there) or the catalog's `http(s)` address;
    /// nil when it has none.
    var artworkAddress: URL? {
        guard let art = artwork?.url(width: 600, height: 600) else { return nil }
        if art.isFileURL { return URL(fileURLWithPath: art.path) }
        return ["http", "https"].contains(art.scheme ?? "") ? art : nil
    }
}
