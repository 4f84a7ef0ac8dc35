import Foundation
import Glibc

/// Whether this app may access the person's music, as in Apple's MusicKit.
///
/// On Linux the person answers once per app (`MusicKitEnvironment.applicationIdentifier`), at
/// a prompt on the controlling terminal that shows the app's usage description; the answer is
/// remembered in `<config>/authorizations.json`. Without a terminal nobody is asked and the
/// status stays `.notDetermined` until someone decides (`musickit authorize APP --allow`), or
/// `MUSICKIT_AUTHORIZATION=authorized|denied|restricted` settles it for headless use.
public struct MusicAuthorization: Sendable {
    public enum Status: String, Equatable, Hashable, Sendable, CustomStringConvertible {
        case notDetermined
        case denied
        case restricted
        case authorized

        public var description: String { rawValue }
    }

    /// The app's current status, without asking.
    public static var currentStatus: MusicAuthorization.Status { status(in: .current) }

    /// The app's status as `environment`'s stores say (or MUSICKIT_AUTHORIZATION).
    static func status(in environment: MusicKitEnvironment) -> MusicAuthorization.Status {
        if let forced = ProcessEnvironment["MUSICKIT_AUTHORIZATION"].flatMap(Status.init(rawValue:)) {
            return forced
        }
        return AuthorizationStore.load(environment)[environment.applicationIdentifier] ?? .notDetermined
    }

    /// Asks the person (once per app) and returns the answer; later calls return it at once.
    public static func request() async -> MusicAuthorization.Status {
        let status = currentStatus
        guard status == .notDetermined else { return status }
        let environment = MusicKitEnvironment.current
        guard let answer = AuthorizationPrompt.ask(app: environment.applicationIdentifier,
                                                   usageDescription: usageDescription) else {
            return .notDetermined
        }
        let decided: Status = answer ? .authorized : .denied
        try? AuthorizationStore.set(decided, for: environment.applicationIdentifier, environment)
        return decided
    }

    /// The app's explanation of why it wants access, shown at the prompt: the
    /// `NSAppleMusicUsageDescription` key of an `Info.plist` next to the executable (as on Apple
    /// platforms), or of the environment.
    /// (Linux addition)
    public static var usageDescription: String? {
        let key = "NSAppleMusicUsageDescription"
        if let value = ProcessEnvironment.nonEmpty(key) { return value }
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        for candidate in [executable.deletingLastPathComponent().appendingPathComponent("Info.plist"),
                          executable.deletingLastPathComponent().appendingPathComponent("\(executable.lastPathComponent).plist")] {
            guard let data = FileManager.default.contents(atPath: candidate.path),
                  let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
                  let description = plist[key] as? String else { continue }
            return description
        }
        return nil
    }
}

/// The answers given, per app.
enum AuthorizationStore {
    struct Decisions: Codable, Equatable, Sendable {
        var apps: [String: String] = [:]
    }

    static func file(_ environment: MusicKitEnvironment) -> SettingsFile<Decisions> {
        SettingsFile(url: environment.configDirectory.appendingPathComponent("authorizations.json"))
    }

    static func load(_ environment: MusicKitEnvironment) -> [String: MusicAuthorization.Status] {
        var problem: SettingsFileError?
        let decisions = file(environment).read(fallback: Decisions(), problem: &problem)
        return decisions.apps.compactMapValues(MusicAuthorization.Status.init(rawValue:))
    }

    static func set(_ status: MusicAuthorization.Status?, for app: String, _ environment: MusicKitEnvironment) throws {
        _ = try file(environment).update(fallback: Decisions()) { decisions in
            decisions.apps[app] = status?.rawValue
        }
    }
}

/// The question on the controlling terminal.
enum AuthorizationPrompt {
    /// True for allow, false for don't allow, nil when there is no terminal to ask on.
    static func ask(app: String, usageDescription: String?) -> Bool? {
        let descriptor = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var text = "\n“\(app)” would like to access Apple Music, your music and video activity, and your media library.\n"
        if let usageDescription { text += "\(usageDescription)\n" }
        text += "Allow? [y/N] "
        _ = text.withCString { write(descriptor, $0, strlen($0)) }
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while read(descriptor, &byte, 1) == 1, byte != 0x0A { answer.append(byte) }
        let reply = String(decoding: answer, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
        return reply == "y" || reply == "yes"
    }
}

/// Decides for an app without asking (not part of Apple's API: there, Settings does it).
/// (Linux addition)
public enum MusicAuthorizationSettings {
    /// Records `status` for `app` (nil forgets the answer, so the app asks again).
    public static func set(_ status: MusicAuthorization.Status?, for app: String) throws {
        try AuthorizationStore.set(status, for: app, .current)
    }

    /// Every app's recorded answer.
    public static var decisions: [String: MusicAuthorization.Status] { AuthorizationStore.load(.current) }
}
