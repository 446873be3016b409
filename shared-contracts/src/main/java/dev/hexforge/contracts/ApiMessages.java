package dev.hexforge.contracts;

/**
 * The small request bodies of the fleet's API, each declared once and read as runner messages are
 * ({@link DeviceMessages#read}: one JSON object, no unknown field, no value of another type, then its bounds).
 */
public final class ApiMessages {
    /** The most characters of a token's name. */
    public static final int MAX_TOKEN_NAME = 200;

    private ApiMessages() {
    }

    /**
     * {@code POST /api/v1/tokens}: both optional.
     *
     * @param tenant whose token (an admin names another tenant); null: the caller's
     * @param name   what the token is for; null: "token"
     */
    public record NewToken(String tenant, String name) implements DeviceMessages.Checked {
        public static final NewToken DEFAULT = new NewToken(null, null);

        @Override
        public void check() {
            if (name != null) {
                if (name.isBlank()) {
                    throw new IllegalArgumentException("name: must be 1-" + MAX_TOKEN_NAME + " characters");
                }
                PlainText.require("name", name, MAX_TOKEN_NAME);
            }
        }

        public String nameOrDefault() {
            return name == null ? "token" : name;
        }
    }

    /** {@code POST /api/v1/devices}: the device's name (1-100 letters, digits, '.', '_' or '-'). */
    public record NewDevice(String name) implements DeviceMessages.Checked {
        @Override
        public void check() {
            if (name == null || !name.matches("[A-Za-z0-9._-]{1,100}")) {
                throw new IllegalArgumentException("name: a device name of 1-100 letters, digits, '.', '_' or '-'");
            }
        }
    }
}
