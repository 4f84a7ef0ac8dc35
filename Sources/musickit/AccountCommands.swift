import PlatformSupport
import AudioEngine
import Foundation
import MusicKitCore
import MusicKitTerminal

/// The app identity the CLI asks authorization under.
let cliApplicationIdentifier = "musickit"

/// Makes sure the CLI may read the library: asks once on a terminal, else explains.
func requireAuthorization(_ command: String) -> ExitCode? {
    var environment = MusicKitEnvironment.current
    environment.applicationIdentifier = cliApplicationIdentifier
    MusicKitEnvironment.current = environment
    let status = (try? waitFor { await MusicAuthorization.request() }) ?? .notDetermined
    switch status {
    case .authorized: return nil
    case .denied, .restricted:
        Console.error("musickit \(command): access to the music library is \(status) for \(cliApplicationIdentifier); "
                      + "change it with `musickit authorize \(cliApplicationIdentifier) --allow`\n")
    case .notDetermined:
        Console.error("musickit \(command): \(cliApplicationIdentifier) is not authorized to access the music library and "
                      + "there is no terminal to ask on; run `musickit authorize \(cliApplicationIdentifier) --allow` "
                      + "(or set MUSICKIT_AUTHORIZATION=authorized)\n")
    }
    return .failure
}

/// `musickit account`: shows and changes the account settings.
enum AccountCommand {
    static let spec = ArgumentSpec(
        options: [.init(name: "--storefront", valueName: "CODE", help: "two-letter storefront, e.g. us, gb"),
                  .init(name: "--subscription", valueName: "active|none", help: "an active Apple Music subscription or none"),
                  .init(name: "--explicit", valueName: "on|off", help: "allow explicit content"),
                  .init(name: "--listening-history", valueName: "on|off", help: "\"Use Listening History\""),
                  .init(name: "--cloud-library", valueName: "on|off", help: "iCloud Music Library"),
                  .init(name: "--sound-check", valueName: "off|track|album|auto",
                        help: "play songs at one loudness (their ReplayGain): every player's default")],
        flags: [.init(name: "--json", help: "print the settings as JSON")],
        positionalName: "", maximumPositionals: 0)

    static let help = """
    usage: musickit account [--storefront CODE] [--subscription active|none] [--explicit on|off]
                            [--listening-history on|off] [--cloud-library on|off]
                            [--sound-check off|track|album|auto] [--json]

    Shows the account (storefront, subscription, explicit content, listening history), and
    changes what the options say. The settings live in $XDG_CONFIG_HOME/musickit/account.json,
    written atomically; other processes see a change at once (MusicSubscription.subscriptionUpdates).

    options:
    \(spec.optionsHelp())

    exit codes: 0 success, 1 the settings could not be written, 2 usage
    """

    static func run(_ arguments: [String]) -> ExitCode {
        let parsed: ParsedArguments
        var changes: [(inout MusicAccountSettings) -> Void] = []
        do {
            parsed = try spec.parse(arguments)
            func flag(_ name: String) throws(UsageError) -> Bool? {
                guard let value = parsed.option(name) else { return nil }
                switch value { case "on", "yes", "true": return true; case "off", "no", "false": return false
                default: throw UsageError(message: "\(name) takes on or off, not \(value)") }
            }
            if let storefront = parsed.option("--storefront") {
                guard storefront.count == 2, storefront.allSatisfy(\.isLetter) else {
                    throw UsageError(message: "--storefront takes a two-letter code such as us or gb")
                }
                // Apple Music's storefronts are countries: an ISO 3166 code, or every search finds nothing.
                guard Locale.Region.isoRegions.contains(where: { $0.identifier.lowercased() == storefront.lowercased() }) else {
                    throw UsageError(message: "--storefront: '\(storefront)' is not a country code (ISO 3166-1, such as us, gb, de, jp)")
                }
                changes.append { $0.storefront = storefront.lowercased() }
            }
            if let subscription = parsed.option("--subscription") {
                guard subscription == "active" || subscription == "none" else {
                    throw UsageError(message: "--subscription takes active or none")
                }
                changes.append { $0.isSubscribed = subscription == "active" }
            }
            if let value = try flag("--explicit") { changes.append { $0.allowsExplicitContent = value } }
            if let value = try flag("--listening-history") { changes.append { $0.usesListeningHistory = value } }
            if let value = try flag("--cloud-library") { changes.append { $0.hasCloudLibraryEnabled = value } }
            if let value = parsed.option("--sound-check") {
                guard let mode = ApplicationMusicPlayer.LoudnessMode(rawValue: value) else {
                    throw UsageError(message: "--sound-check takes off, track, album or auto, not \(value)")
                }
                changes.append { $0.soundCheck = mode }
            }
        } catch {
            Console.error("musickit account: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        do {
            let (settings, problem) = MusicAccountSettings.load()
            if let problem { Console.error("warning: \(problem)\n") }
            var updated = settings
            if !changes.isEmpty {
                updated = try MusicAccountSettings.update { settings in for change in changes { change(&settings) } }
            }
            if parsed.has("--json") {
                Console.out(try jsonText(updated) + "\n")
            } else {
                Console.out("""
                storefront:         \(updated.storefront)
                subscription:       \(updated.isSubscribed ? "active" : "none")
                explicit content:   \(updated.allowsExplicitContent ? "allowed" : "not allowed")
                listening history:  \(updated.usesListeningHistory ? "on" : "off")
                cloud library:      \(updated.hasCloudLibraryEnabled ? "on" : "off")
                sound check:        \(updated.soundCheck.rawValue)

                """)
            }
            return .success
        } catch {
            Console.error("musickit account: \(errorMessage(error))\n")
            return .failure
        }
    }
}

/// `musickit authorize`: shows, asks or sets an app's access to the music library.
enum AuthorizeCommand {
    static let spec = ArgumentSpec(
        flags: [.init(name: "--allow", help: "authorize the app"), .init(name: "--deny", help: "deny the app"),
                .init(name: "--reset", help: "forget the answer: the app asks again")],
        positionalName: "APP", maximumPositionals: 1)

    static let help = """
    usage: musickit authorize [APP] [--allow | --deny | --reset]

    Shows whether APP (default: musickit) may access Apple Music and the music library; without
    an answer yet, asks on the terminal, as MusicAuthorization.request() does. --allow, --deny
    and --reset decide for it (for headless machines and scripts).

    options:
    \(spec.optionsHelp())

    exit codes: 0 authorized, 3 denied, restricted or not determined, 1 failure, 2 usage
    """

    static func run(_ arguments: [String]) -> ExitCode {
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
            if [parsed.has("--allow"), parsed.has("--deny"), parsed.has("--reset")].filter({ $0 }).count > 1 {
                throw UsageError(message: "choose one of --allow, --deny, --reset")
            }
        } catch {
            Console.error("musickit authorize: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        let app = parsed.positionals.first ?? cliApplicationIdentifier
        var environment = MusicKitEnvironment.current
        environment.applicationIdentifier = app
        MusicKitEnvironment.current = environment
        do {
            let status: MusicAuthorization.Status
            if parsed.has("--allow") {
                try MusicAuthorizationSettings.set(.authorized, for: app)
                status = .authorized
            } else if parsed.has("--deny") {
                try MusicAuthorizationSettings.set(.denied, for: app)
                status = .denied
            } else if parsed.has("--reset") {
                try MusicAuthorizationSettings.set(nil, for: app)
                status = .notDetermined
            } else {
                status = try waitFor { await MusicAuthorization.request() }
            }
            Console.out("\(app): \(status)\n")
            return status == .authorized ? .success : .someEntriesFailed
        } catch {
            Console.error("musickit authorize: \(errorMessage(error))\n")
            return .failure
        }
    }
}

/// `musickit subscribe`: the subscription offer on the terminal.
enum SubscribeCommand {
    static let spec = ArgumentSpec(
        options: [.init(name: "--message", valueName: "join|playMusic|addMusic", help: "which offer message to show (default join)"),
                  .init(name: "--item", valueName: "ID", help: "the catalog item the offer is about"),
                  .init(name: "--affiliate-token", valueName: "TOKEN", help: "Apple Services Performance Partner token"),
                  .init(name: "--campaign-token", valueName: "TOKEN", help: "campaign token")],
        flags: [.init(name: "--yes", help: "accept without asking (scripts)")],
        positionalName: "", maximumPositionals: 0)

    static let help = """
    usage: musickit subscribe [--message join|playMusic|addMusic] [--item ID] [--yes]

    Presents the Apple Music subscription offer (MusicSubscriptionOffer) on the terminal, with
    the message for its identifier, and subscribes the account when accepted, without leaving
    the terminal. Nothing to offer when the account is subscribed already.

    options:
    \(spec.optionsHelp())

    exit codes: 0 subscribed, 3 declined or already subscribed, 1 failure (no terminal), 2 usage
    """

    static func run(_ arguments: [String]) -> ExitCode {
        let parsed: ParsedArguments
        var options = MusicSubscriptionOffer.Options()
        do {
            parsed = try spec.parse(arguments)
            switch parsed.option("--message") ?? "join" {
            case "join": options.messageIdentifier = .join
            case "playMusic": options.messageIdentifier = .playMusic
            case "addMusic": options.messageIdentifier = .addMusic
            case let other: throw UsageError(message: "unknown message \(other) (join, playMusic, addMusic)")
            }
            options.itemID = parsed.option("--item").map { MusicItemID($0) }
            options.affiliateToken = parsed.option("--affiliate-token")
            options.campaignToken = parsed.option("--campaign-token")
        } catch {
            Console.error("musickit subscribe: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        if MusicAccountSettings.load().settings.isSubscribed {
            Console.out("the account is already subscribed\n")
            return .someEntriesFailed
        }
        do {
            if parsed.has("--yes") {
                let message = MusicSubscriptionOffer.message(for: options, itemTitle: nil)
                Console.out("\(message.headline)\n\(message.body)\n")
                _ = try MusicAccountSettings.update { $0.isSubscribed = true }
                Console.out("subscribed\n")
                return .success
            }
            let offerOptions = options
            let subscribed = try waitFor { try await MusicSubscriptionOffer.present(options: offerOptions) }
            return subscribed ? .success : .someEntriesFailed
        } catch {
            Console.error("musickit subscribe: \(errorMessage(error))\n")
            return .failure
        }
    }
}
