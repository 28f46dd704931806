"""Signal set-up shared by yuebing's long-running Python processes (store service, real client)."""

import signal


def unblock_shutdown_signals() -> None:
    """Lets SIGINT/SIGTERM through even if the parent process started us with them blocked
    (a blocked mask is inherited across exec: such a process would never see its stop signal)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
