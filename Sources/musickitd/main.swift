// musickitd: the system music player's daemon (SystemMusicPlayer's other end). One per user;
// started by the first client that needs it, or by its systemd user unit
// (Assets/systemd/musickitd.service). Protocol: Sources/MusicKitCore/System/SystemPlayerWire.swift; the service: Sources/MusicKitDaemon/.
import Foundation
import Glibc
import MusicKitCore
import MusicKitDaemon

// First, before anything opens a descriptor of its own: close what the starting process left
// open above standard error (a client's pipes among them; a daemon holding them would keep that
// client's reader waiting forever). Not the sockets systemd hands over (socket activation:
// LISTEN_FDS descriptors from 3 on, for this process).
let activatedCount = SystemPlayerWire.activatedDescriptorCount()
if let directory = opendir("/proc/self/fd") {
    var inherited: [Int32] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if let descriptor = Int32(name), descriptor > 2 + activatedCount, descriptor != dirfd(directory) { inherited.append(descriptor) }
    }
    closedir(directory)
    for descriptor in inherited { close(descriptor) }
}

// Signals blocked in the thread that started this process stay blocked in it: a client's
// task thread blocks SIGTERM, which would make the daemon deaf to it. Unblock them all.
var noSignals = sigset_t()
sigemptyset(&noSignals)
sigprocmask(SIG_SETMASK, &noSignals, nil)

let usage = """
    usage: musickitd [--mpd-port PORT] [--help]

    The system music player's daemon: plays what SystemMusicPlayer, `musickit play --system` and
    `musickit pause|next|...` ask, and keeps playing when they are gone. One per user; it listens
    on $XDG_RUNTIME_DIR/musickit/player.sock (MUSICKIT_RUNTIME_DIR overrides), plays on the
    PulseAudio or PipeWire server (natively) when one is there, else (or when it does not answer)
    on ALSA's default device (`musickit daemon device NAME` overrides both, MUSICKIT_AUDIO_DEVICE
    that), and keeps its queue and
    position in $XDG_DATA_HOME/musickit/system-player.json. Clients start it when none runs; it
    exits on SIGTERM or `musickit daemon stop`.

    It also speaks MPD's protocol on mpd.sock beside its socket, and, with --mpd-port PORT (or
    MUSICKIT_MPD_PORT=PORT in its environment, or `musickit daemon mpd-port PORT`), on
    127.0.0.1:PORT (6600 is MPD's port) for MPD clients that only know TCP. Off by default: any
    local user can connect to a TCP port.

    Exit codes: 0 stopped (or another musickitd already runs), 1 could not start, 2 wrong arguments.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(0)
}
var mpdPortText = ProcessInfo.processInfo.environment["MUSICKIT_MPD_PORT"].flatMap { $0.isEmpty ? nil : $0 }
if let index = arguments.firstIndex(of: "--mpd-port") {
    guard index + 1 < arguments.count else {
        FileHandle.standardError.write(Data("musickitd: --mpd-port needs a port\n\(usage)\n".utf8))
        exit(2)
    }
    mpdPortText = arguments[index + 1]
    arguments.removeSubrange(index...index + 1)
}
if let unknown = arguments.first {
    FileHandle.standardError.write(Data("musickitd: unknown argument \(unknown)\n\(usage)\n".utf8))
    exit(2)
}
// The settings of `musickit daemon device|mpd-port`, below its arguments and environment.
let (settings, settingsProblem) = SystemPlayerSettings.load()
if let settingsProblem { FileHandle.standardError.write(Data("musickitd: \(settingsProblem)\n".utf8)) }
var mpdPort = settings.mpdPort
if let mpdPortText {
    guard let port = UInt16(mpdPortText), port > 0 else {
        FileHandle.standardError.write(Data("musickitd: the MPD port must be 1-65535, got \(mpdPortText)\n\(usage)\n".utf8))
        exit(2)
    }
    mpdPort = port
}
// The system player is the system's music app: it plays what an app hands it, and the app asked
// for access on its own side (SystemMusicPlayer, `musickit play --system` check their own
// authorization); catalog content still needs the account's subscription here.
setenv("MUSICKIT_AUTHORIZATION", "authorized", 1)
// The device set with `musickit daemon device NAME`, unless the environment names one.
if (ProcessInfo.processInfo.environment["MUSICKIT_AUDIO_DEVICE"] ?? "").isEmpty {
    if let device = settings.device, !device.isEmpty { setenv("MUSICKIT_AUDIO_DEVICE", device, 1) }
}
do {
    if try !SystemPlayerServer(mpdPort: mpdPort, stopped: { exit(0) }).run() {
        FileHandle.standardError.write(Data("musickitd: another musickitd already runs for this user\n".utf8))
    }
    exit(0)
} catch {
    FileHandle.standardError.write(Data("musickitd: \(error)\n".utf8))
    exit(1)
}
