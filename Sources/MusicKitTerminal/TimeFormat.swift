import PlatformSupport
import Foundation
import MusicKitCore

/// A time as people read it: "3:07", "1:02:03"; "--:--" for no time (negative, NaN or
/// infinite: a client may send any of them, and a screen or a status line shows it).
package func formatTime(_ seconds: Double) -> String {
    guard seconds.isFinite, seconds >= 0 else { return "--:--" }
    let total = seconds.clampedInt(.towardZero)
    if total >= 3_600 { return String(format: "%d:%02d:%02d", total / 3_600, total / 60 % 60, total % 60) }
    return String(format: "%d:%02d", total / 60, total % 60)
}
