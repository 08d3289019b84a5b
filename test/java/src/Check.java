import java.util.concurrent.Callable;

/**
 * The line protocol shared by every scenario (test/integration/lib.sh,
 * sk_check_lines): "PASS what" or "FAIL what: why" on stdout, one per
 * check; {@link #exit()} ends the program with 1 when any check failed.
 * A check is a Callable that returns null when it holds, else the reason.
 */
final class Check {
    private static int failures;
    private static int passes;

    private Check() {}

    static void that(String what, Callable<String> body) {
        String why;
        try {
            why = body.call();
        } catch (Throwable t) {
            Throwable c = t;
            while (c.getCause() != null && c != c.getCause()) c = c.getCause();
            why = c.getClass().getSimpleName() + ": " + c.getMessage();
        }
        if (why == null) {
            passes++;
            System.out.println("PASS " + what);
        } else {
            failures++;
            System.out.println("FAIL " + what + ": " + why.replace('\n', ' '));
        }
        System.out.flush();
    }

    /** why-not for an equality, or null. */
    static String eq(Object want, Object got) {
        return java.util.Objects.equals(want, got) ? null : "want " + want + ", got " + got;
    }

    static void exit() {
        System.err.println("checks: " + passes + " pass, " + failures + " fail");
        System.exit(failures == 0 && passes > 0 ? 0 : 1);
    }
}
