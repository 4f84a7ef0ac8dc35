import AudioEngine
import Foundation
import MusicKitCore
import MusicKitTerminal

/// `musickit probe`: what an audio file is and whether it plays, decoded to the end exactly as
/// the player would (the same decoder and rate conversion), without a device. The decoder
/// fuzzing run (`scripts/bench --only fuzz`, and a short one in `scripts/test`) runs it on
/// mutated files, one process each, so a crash or a hang is seen and counted.
enum ProbeCommand {
    static let spec = ArgumentSpec(
        options: [.init(name: "--rate", valueName: "HZ", help: "decode converted to this rate (default: the file's)")],
        flags: [.init(name: "--quiet", help: "print nothing; the exit code says it all"),
                .init(name: "--loudness", help: "also measure the loudness (EBU R128: integrated LUFS, true peak) and its ReplayGain")],
        positionalName: "FILE...", minimumPositionals: 1)

    static let help = """
    usage: musickit probe [--rate HZ] [--quiet] [--loudness] FILE...

    Opens each audio file and decodes it to the end, as the player would, without playing it:
    prints its format, rate, channels, declared and decoded length and tags, its ReplayGain
    tags (and the broken ones, never applied), or why it cannot be played (missing, not
    audio, corrupt, truncated). --loudness measures it too (libebur128).

    options:
    \(spec.optionsHelp())

    exit codes: 0 every file decodes, 3 some do not, 4 none does, 2 usage
    """

    static func run(_ arguments: [String]) -> ExitCode {
        let parsed: ParsedArguments
        let rate: Int?
        do {
            parsed = try spec.parse(arguments)
            if let text = parsed.option("--rate") {
                guard let value = Int(text), (8_000...384_000).contains(value) else {
                    throw UsageError(message: "--rate takes a rate from 8000 to 384000 Hz, not \(text)")
                }
                rate = value
            } else {
                rate = nil
            }
        } catch {
            Console.error("musickit probe: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        let quiet = parsed.has("--quiet")
        var failures = 0
        for (index, path) in parsed.positionals.enumerated() {
            do {
                let info = try AudioFileDecoder(path: path).readAllTags().info
                let entry = AudioEntry(token: .init(rawValue: UInt64(index + 1)), path: path)
                let decoder = try EntryDecoder(entry: entry, streamRate: rate ?? info.sampleRate,
                                               streamChannels: info.channelCount)
                var frames = 0
                while !decoder.isFinished { frames += try decoder.nextChunk().count / max(1, info.channelCount) }
                if quiet { continue }
                let tags = [("title", info.title), ("artist", info.artist), ("album", info.album), ("album artist", info.albumArtist),
                            ("disc", info.discNumber.map(String.init)), ("track", info.trackNumber.map(String.init))]
                    .compactMap { name, value in value.map { "\(name) \"\($0)\"" } }
                Console.out("\(path): \(info.formatName), \(info.sampleRate) Hz, \(info.channelCount) ch, "
                            + "\(formatTime(info.duration)) (\(info.frameCount) frames declared, \(frames) decoded"
                            + (rate.map { " at \($0) Hz" } ?? "") + ")"
                            + (tags.isEmpty ? "" : "; " + tags.joined(separator: ", ")) + "\n")
                if let loudness = AudioFileDecoder.loudnessTags(atPath: path), let line = Self.describe(loudness) {
                    Console.out("  \(line)\n")
                }
                if parsed.has("--loudness") {
                    if let measured = try LoudnessMeter.measure(path: path) {
                        Console.out(String(format: "  loudness: %.2f LUFS, true peak %.6f (%.2f dBTP); ReplayGain %+.2f dB\n",
                                           measured.integratedLUFS, measured.truePeak, 20 * log10(max(measured.truePeak, 1e-9)),
                                           measured.replayGainDB))
                    } else {
                        Console.out("  loudness: silent (no block above EBU R128's gate)\n")
                    }
                }
            } catch {
                failures += 1
                if !quiet { Console.error("musickit probe: \(errorMessage(error))\n") }
            }
        }
        if failures == 0 { return .success }
        return failures == parsed.positionals.count ? .nothingPlayable : .someEntriesFailed
    }

    /// The file's ReplayGain values, and the tags that were there but could not be used.
    static func describe(_ tags: LoudnessTags) -> String? {
        func gain(_ dB: Double?, _ peak: Double?) -> String? {
            guard let dB else { return nil }
            return String(format: "%+.2f dB", dB) + (peak.map { String(format: " (peak %.6f)", $0) } ?? "")
        }
        var parts: [String] = []
        if let track = gain(tags.trackGainDB, tags.trackPeak) { parts.append("track \(track)") }
        if let album = gain(tags.albumGainDB, tags.albumPeak) { parts.append("album \(album)") }
        if !tags.ignored.isEmpty { parts.append("ignored: " + tags.ignored.joined(separator: ", ")) }
        return parts.isEmpty ? nil : "ReplayGain: " + parts.joined(separator: "; ")
    }
}
