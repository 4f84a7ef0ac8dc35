import PlatformSupport
import Foundation
import Synchronization

/// Where OpenMusicKit keeps its files on Linux, and where its bundled assets are. Not part of
/// Apple's API: Linux needs it, and tests point it at temporary directories.
///
/// Defaults follow the XDG base directories: config `$XDG_CONFIG_HOME/musickit` (account,
/// authorizations), data `$XDG_DATA_HOME/musickit` (catalog and library databases, listening
/// history), runtime `$XDG_RUNTIME_DIR/musickit` (the system player's socket). Each can be
/// overridden with `MUSICKIT_CONFIG_DIR`, `MUSICKIT_DATA_DIR`, `MUSICKIT_RUNTIME_DIR`; the bundled
/// assets (previews, catalog documents, artwork) are found through `MUSICKIT_ASSETS`, next to the
/// executable in a source checkout, or under `/usr/local/share/musickit` and `/usr/share/musickit`.
/// (Linux addition)
public struct MusicKitEnvironment: Sendable, Equatable {
    public var configDirectory: URL
    public var dataDirectory: URL
    public var runtimeDirectory: URL
    /// The bundled `Assets` directory, nil when none was found.
    public var assetsDirectory: URL?
    /// The name the app asks authorization under (Apple: the bundle identifier).
    public var applicationIdentifier: String

    public init(configDirectory: URL, dataDirectory: URL, runtimeDirectory: URL, assetsDirectory: URL?,
                applicationIdentifier: String) {
        self.configDirectory = configDirectory
        self.dataDirectory = dataDirectory
        self.runtimeDirectory = runtimeDirectory
        self.assetsDirectory = assetsDirectory
        self.applicationIdentifier = applicationIdentifier
    }

    /// All directories under `root` (for tests and sandboxes).
    public init(root: URL, assetsDirectory: URL? = MusicKitEnvironment.bundledAssets(),
                applicationIdentifier: String = MusicKitEnvironment.defaultApplicationIdentifier) {
        self.init(configDirectory: root.appendingPathComponent("config"), dataDirectory: root.appendingPathComponent("data"),
                  runtimeDirectory: root.appendingPathComponent("runtime"), assetsDirectory: assetsDirectory,
                  applicationIdentifier: applicationIdentifier)
    }

    /// From the process environment (see the type's documentation).
    public static func fromProcessEnvironment() -> MusicKitEnvironment {
        let environment = ProcessEnvironment.self
        let home = URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory())
        func directory(_ override: String, _ xdg: String, _ fallback: URL) -> URL {
            if let path = environment.nonEmpty(override) { return URL(fileURLWithPath: path) }
            if let path = environment.nonEmpty(xdg) { return URL(fileURLWithPath: path).appendingPathComponent("musickit") }
            return fallback.appendingPathComponent("musickit")
        }
        // (Sources/CEarlyRequest/EarlyRequest.c finds the runtime folder the same way.)
        let runtimeFallback = URL(fileURLWithPath: "/tmp/musickit-\(getuid())")
        return MusicKitEnvironment(
            configDirectory: directory("MUSICKIT_CONFIG_DIR", "XDG_CONFIG_HOME", home.appendingPathComponent(".config")),
            dataDirectory: directory("MUSICKIT_DATA_DIR", "XDG_DATA_HOME", home.appendingPathComponent(".local/share")),
            runtimeDirectory: environment.nonEmpty("MUSICKIT_RUNTIME_DIR").map { URL(fileURLWithPath: $0) }
                ?? environment.nonEmpty("XDG_RUNTIME_DIR").map { URL(fileURLWithPath: $0).appendingPathComponent("musickit") }
                ?? runtimeFallback,
            assetsDirectory: bundledAssets(),
            applicationIdentifier: environment["MUSICKIT_APP_ID"] ?? defaultApplicationIdentifier)
    }

    /// OpenMusicKit's version (the release tag an app depends on; `musickit --version`).
    public static let version = "0.1.0"

    /// The executable's name, as an app's identity when none is set.
    public static var defaultApplicationIdentifier: String {
        // The last component of argv[0], as URL(fileURLWithPath:).lastPathComponent gives it,
        // without making a URL (its first one costs a start ~0.1 ms).
        let name = (CommandLine.arguments.first ?? "").split(separator: "/").last.map(String.init)
        return name ?? "musickit"
    }

    /// Finds the bundled `Assets` directory (it holds `Catalog/`).
    ///
    /// Candidates are plain paths, checked with one `stat` each: a file URL per candidate
    /// would look each up again (`musickit play FILE` finds its environment before its first
    /// sound).
    public static func bundledAssets() -> URL? {
        var candidates: [String] = []
        if let path = ProcessEnvironment.nonEmpty("MUSICKIT_ASSETS") {
            candidates.append(path)
        }
        // A source checkout: .build/<triple>/<configuration>/<executable> is four levels below the root.
        var directory = (realpath(CommandLine.arguments.first ?? "", nil).map { resolved in
            defer { free(resolved) }
            return String(cString: resolved)
        } ?? CommandLine.arguments.first ?? "") as NSString
        for _ in 0..<5 {
            directory = directory.deletingLastPathComponent as NSString
            candidates.append(directory.appendingPathComponent("Assets"))
        }
        // This source file's checkout (tests, `swift run`).
        var source = #filePath as NSString
        for _ in 0..<4 { source = source.deletingLastPathComponent as NSString }
        candidates.append(source.appendingPathComponent("Assets"))
        candidates.append("/usr/local/share/musickit/Assets")
        candidates.append("/usr/share/musickit/Assets")
        return candidates.first { path in
            var status = stat()
            return stat(path + "/Catalog", &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
        }.map { URL(fileURLWithPath: $0, isDirectory: true) }
    }

    private static let shared = Mutex<MusicKitEnvironment?>(nil)

    /// The environment MusicKit uses; from the process environment unless set.
    public static var current: MusicKitEnvironment {
        get {
            shared.withLock { state in
                if let state { return state }
                let value = fromProcessEnvironment()
                state = value
                return value
            }
        }
        set {
            shared.withLock { $0 = newValue }
            MusicCatalogService.reset()
        }
    }

    func ensureDirectory(_ url: URL) throws {
        try PrivateFiles.ensureDirectory(url)
    }
}
