import PlatformSupport
import Foundation
import Glibc

/// The person's account settings, as this machine keeps them (not part of Apple's API: there,
/// the account lives on Apple's servers).
///
/// Stored as JSON in `<config>/account.json`, written atomically (a temporary file renamed
/// over the old one, under an exclusive `flock` so that two processes do not interleave).
/// There is no store to buy from: the subscription is a local setting (`musickit account`,
/// `musickit subscribe`), and a fresh account starts subscribed so the bundled catalog plays.
/// (Linux addition)
public struct MusicAccountSettings: Codable, Equatable, Sendable {
    /// Two-letter storefront code: which catalog requests read.
    public var storefront: String = "us"
    /// An active Apple Music subscription: catalog content plays.
    public var isSubscribed: Bool = true
    /// iCloud Music Library (library sync) is on.
    public var hasCloudLibraryEnabled: Bool = true
    /// The person allows explicit content; without it, catalog requests leave explicit items out
    /// (or give their clean equivalents with `.findEquivalents`).
    public var allowsExplicitContent: Bool = true
    /// "Use Listening History": playback is recorded in recently played.
    public var usesListeningHistory: Bool = true
    /// Sound Check: the loudness normalization every player of this account starts with
    /// (`ApplicationMusicPlayer.loudnessMode`, which a player may set otherwise); off by default.
    public var soundCheck: ApplicationMusicPlayer.LoudnessMode = .off
    /// The affiliate and campaign tokens of the offer the person subscribed through.
    public var offerAttribution: String?
    /// Incremented on every write, so readers can tell a change.
    public var revision: Int = 0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case storefront, isSubscribed, hasCloudLibraryEnabled, allowsExplicitContent, usesListeningHistory, soundCheck, offerAttribution,
             revision
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = MusicAccountSettings()
        storefront = try container.decodeIfPresent(String.self, forKey: .storefront) ?? defaults.storefront
        isSubscribed = try container.decodeIfPresent(Bool.self, forKey: .isSubscribed) ?? defaults.isSubscribed
        hasCloudLibraryEnabled = try container.decodeIfPresent(Bool.self, forKey: .hasCloudLibraryEnabled) ?? defaults.hasCloudLibraryEnabled
        allowsExplicitContent = try container.decodeIfPresent(Bool.self, forKey: .allowsExplicitContent) ?? defaults.allowsExplicitContent
        usesListeningHistory = try container.decodeIfPresent(Bool.self, forKey: .usesListeningHistory) ?? defaults.usesListeningHistory
        // An unknown mode (a newer version's) is off here rather than the whole file unreadable.
        soundCheck = (try? container.decodeIfPresent(String.self, forKey: .soundCheck)).flatMap {
            $0.flatMap(ApplicationMusicPlayer.LoudnessMode.init(rawValue:))
        } ?? defaults.soundCheck
        offerAttribution = try container.decodeIfPresent(String.self, forKey: .offerAttribution)
        revision = try container.decodeIfPresent(Int.self, forKey: .revision) ?? 0
        guard storefront.count == 2, storefront.allSatisfy({ $0.isLetter && $0.isLowercase }) else {
            throw DecodingError.dataCorruptedError(forKey: .storefront, in: container,
                                                   debugDescription: "a storefront is a two-letter code such as \"us\"")
        }
    }
}

/// A settings file that could not be read; it was moved aside, not overwritten.
/// (Linux addition)
public struct SettingsFileError: Error, CustomStringConvertible, Sendable, Equatable {
    public let file: String
    public let reason: String
    /// Where the unreadable file was moved, so nothing in it is lost.
    public let keptAt: String?

    public var description: String {
        "\(file) is unreadable (\(reason))" + (keptAt.map { "; it was moved to \($0) and defaults are used until it is fixed" } ?? "")
    }
}

/// Reads and writes a JSON settings file atomically and safely between processes.
struct SettingsFile<Value: Codable & Equatable & Sendable>: Sendable {
    let url: URL

    private var lockURL: URL { url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).lock") }

    /// Runs `body` holding an exclusive lock shared by every process using this file.
    func withLock<T>(_ body: () throws -> T) throws -> T {
        try PrivateFiles.ensureDirectory(url.deletingLastPathComponent())
        let descriptor = open(lockURL.path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: lockURL.path]) }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }

    /// The stored value; `fallback` when there is none. An unreadable file is moved aside
    /// (never overwritten) and reported through `problem`.
    func read(fallback: Value, problem: inout SettingsFileError?) -> Value {
        guard let data = FileManager.default.contents(atPath: url.path) else { return fallback }
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch {
            let reason: String
            if let decoding = error as? DecodingError {
                reason = "\(CatalogDocument.path(of: decoding)): \(CatalogDocument.reason(of: decoding))"
            } else {
                reason = error.localizedDescription
            }
            let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
            let aside = url.deletingLastPathComponent().appendingPathComponent("\(url.lastPathComponent).corrupt-\(stamp)")
            let moved = (try? withLock { () throws -> Bool in
                // Only move it if it is still the same unreadable content.
                guard FileManager.default.contents(atPath: url.path) == data else { return false }
                return Glibc.rename(url.path, aside.path) == 0
            }) ?? false
            problem = SettingsFileError(file: url.path, reason: reason, keptAt: moved ? aside.path : nil)
            return fallback
        }
    }

    /// Writes `value` (an exclusive temporary file, fsync, rename; see `PrivateFiles`).
    func write(_ value: Value) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try PrivateFiles.writeAtomically(try encoder.encode(value), to: url)
    }

    /// Reads, changes and writes under the lock, so concurrent updates from several processes
    /// all land. Returns the value written.
    func update(fallback: Value, _ change: (inout Value) throws -> Void) throws -> Value {
        try withLock {
            var problem: SettingsFileError?
            var value = read(fallback: fallback, problem: &problem)
            try change(&value)
            try write(value)
            return value
        }
    }
}

/// The account of the current environment.
package enum AccountStore {
    static func file(_ environment: MusicKitEnvironment = .current) -> SettingsFile<MusicAccountSettings> {
        SettingsFile(url: environment.configDirectory.appendingPathComponent("account.json"))
    }

    /// The account, or defaults when none was saved (an unreadable file is moved aside and reported).
    package static func load(_ environment: MusicKitEnvironment = .current) -> (account: MusicAccountSettings, problem: SettingsFileError?) {
        var problem: SettingsFileError?
        let account = file(environment).read(fallback: MusicAccountSettings(), problem: &problem)
        return (account, problem)
    }

    /// Only the account's Sound Check, read the quick way (the player reads it at every start,
    /// where a file's start otherwise reads no account): the project's JSON parser, no `Codable`
    /// decoding of the whole settings. Off when there is no file or it says nothing usable.
    package static func soundCheck(_ environment: MusicKitEnvironment = .current) -> ApplicationMusicPlayer.LoudnessMode {
        guard let data = FileManager.default.contents(atPath: file(environment).url.path),
              let mode = (try? JSONValue.parse(data))?["soundCheck"]?.string else { return .off }
        return ApplicationMusicPlayer.LoudnessMode(rawValue: mode) ?? .off
    }

    @discardableResult
    package static func update(_ environment: MusicKitEnvironment = .current, _ change: (inout MusicAccountSettings) throws -> Void) throws -> MusicAccountSettings {
        try file(environment).update(fallback: MusicAccountSettings()) { account in
            try change(&account)
            account.revision += 1
        }
    }
}

extension MusicAccountSettings {
    /// The saved settings (defaults when none were saved); an unreadable file is moved aside and reported.
    public static func load() -> (settings: MusicAccountSettings, problem: SettingsFileError?) {
        let (account, problem) = AccountStore.load()
        return (account, problem)
    }

    /// Changes the settings under an exclusive lock shared with other processes; returns them.
    @discardableResult
    public static func update(_ change: (inout MusicAccountSettings) throws -> Void) throws -> MusicAccountSettings {
        try AccountStore.update(.current, change)
    }
}
